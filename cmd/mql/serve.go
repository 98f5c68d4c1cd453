package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mql-dev/mql/embedder"
	"github.com/mql-dev/mql/graphstore"
	"github.com/mql-dev/mql/server"
)

// defaultListen is where `mql serve` listens unless told otherwise: loopback only.
const defaultListen = "127.0.0.1:7411"

// embedderKeyEnv names the environment variable that holds the embedder's key: a flag would
// show it to every user of the machine in the process list.
const embedderKeyEnv = "MQL_EMBEDDER_KEY"

// defaultEmbedderModel is OpenAI's small embedding model (1536 dimensions).
const defaultEmbedderModel = "text-embedding-3-small"

// shutdownGrace bounds how long a stopping server waits for requests in flight.
const shutdownGrace = 10 * time.Second

const serveUsage = `usage: mql serve [--listen ADDR] [--tls-cert FILE --tls-key FILE] [--log text|json] [--open] [--metrics ADDR] [--drain-delay DURATION]
                 [--embedder URL [--embedder-model NAME]] [LIMITS] [DB | --db DB]
Serves DB to a team: MCP at /mcp, the language at POST /v1/query, changes at GET /v1/watch, each
request as the principal of its bearer token (mql token create NAME DB), and a web page at / that
draws the memory for a person who signs in with a token (--open: the owner, by a one-time link);
the command line attaches over a local socket beside a bbolt store. GET /healthz and GET /readyz
answer probes without a token. With --embedder, claims written without a vector get one from
that OpenAI-compatible embeddings endpoint (its key, if it needs one, in $MQL_EMBEDDER_KEY), and
searches rank by similarity too. Stops on SIGINT or SIGTERM, letting requests finish. LIMITS
bound what one request may cost, whoever sends it:
--max-statements, --max-body, --max-output, --timeout, --max-sessions (below).
` + dbUsage

// runServe is `mql serve [--listen ADDR] [--tls-cert F --tls-key F] [DB]`: one process holds
// the store and serves it to every agent (MCP over Streamable HTTP, the language over HTTP, a
// change feed) and, on a local socket, to the command line, until SIGINT or SIGTERM.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("mql serve", serveUsage, stdout, stderr)
	listen := fs.String("listen", defaultListen, "listen on `ADDR` (host:port); loopback unless told otherwise")
	certFile := fs.String("tls-cert", "", "serve HTTPS with this certificate `FILE` (PEM)")
	keyFile := fs.String("tls-key", "", "the certificate's private key `FILE` (PEM)")
	logFormat := fs.String("log", "text", "request log `FORMAT` on stderr: text or json")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics at GET /metrics on `ADDR` (host:port), a listener of its own; off unless given")
	drainDelay := fs.Duration("drain-delay", 0, "on SIGTERM, keep serving for `DURATION` with GET /readyz answering 503 before refusing new connections, so that a load balancer stops sending work first")
	embedURL := fs.String("embedder", "", "embed claims written without a vector, and search texts, with the OpenAI-compatible endpoint at `URL` (POST URL/v1/embeddings, or URL as given if it ends in /embeddings); its key, if any, from $"+embedderKeyEnv)
	embedModel := fs.String("embedder-model", defaultEmbedderModel, "the `NAME` of the model the embedder embeds with")
	openPage := fs.Bool("open", false, "print a one-time link that signs the owner in to the web page (within 60s), and open it with xdg-open if there is one")
	limits, checkLimits := addLimitFlags(fs.FlagSet)
	dbFlag := addDBFlag(fs.FlagSet)
	dsn, code, ok := fs.parseDB(args, dbFlag)
	if !ok {
		return code
	}
	if err := checkLimits(); err != nil {
		fmt.Fprintf(stderr, "mql serve: %v\n", err)
		return exitUsage
	}
	var emb *embedder.Client
	if *embedURL != "" {
		var err error
		if emb, err = embedder.New(*embedURL, *embedModel, os.Getenv(embedderKeyEnv)); err != nil {
			fmt.Fprintf(stderr, "mql serve: --embedder: %v\n", err)
			return exitUsage
		}
	}
	if (*certFile == "") != (*keyFile == "") {
		fmt.Fprintln(stderr, "mql serve: --tls-cert and --tls-key go together")
		return exitUsage
	}
	var handler slog.Handler
	switch *logFormat {
	case "text":
		handler = slog.NewTextHandler(stderr, nil)
	case "json":
		handler = slog.NewJSONHandler(stderr, nil)
	default:
		fmt.Fprintf(stderr, "mql serve: --log %q: want text or json\n", *logFormat)
		return exitUsage
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "mql serve: cannot listen on %s: %v\n", *listen, err)
		return exitUsage
	}
	defer ln.Close()
	tls := *certFile != ""
	if !tls && !isLoopback(ln.Addr()) {
		fmt.Fprintf(stderr, "mql serve: WARNING: listening on %s without TLS: bearer tokens and the memory cross the network in clear text; give --tls-cert and --tls-key, or listen on 127.0.0.1\n", ln.Addr())
	}

	var metrics *server.Metrics
	var mln net.Listener
	req := openReq{cmd: "mql serve", dsn: dsn, stdout: stdout, announce: true}
	if *metricsAddr != "" {
		if mln, err = net.Listen("tcp", *metricsAddr); err != nil {
			fmt.Fprintf(stderr, "mql serve: cannot listen on %s for --metrics: %v\n", *metricsAddr, err)
			return exitUsage
		}
		defer mln.Close()
		if !isLoopback(mln.Addr()) {
			fmt.Fprintf(stderr, "mql serve: WARNING: --metrics on %s: anyone who reaches it reads, without a token, how many claims, keys and principals the store holds and how it is used (never a name or a value); listen on 127.0.0.1 or a network only your monitoring reaches\n", mln.Addr())
		}
		metrics = server.NewMetrics(server.MetricsOptions{})
		req.opts.OnCommit = metrics.ObserveCommit
	}
	db, dsn, code := openStore(ctx, req, stderr)
	if db == nil {
		return code
	}
	defer db.Close()

	log := slog.New(handler)
	scheme := "http"
	if tls {
		scheme = "https"
	}
	url := fmt.Sprintf("%s://%s", scheme, ln.Addr())
	opts := server.Options{Logger: log, Store: graphstore.RedactDSN(dsn), URL: url, Limits: *limits, Metrics: metrics}
	if emb != nil {
		// A nil *Client in the interface would not be nil: set it only when there is one.
		opts.Embedder = emb
		log.Info("embedder", "endpoint", emb.Endpoint(), "model", emb.Model())
	}
	srv := server.New(db, db, opts)
	defer srv.Close()
	hs := httpServer(srv.Handler())
	errc := make(chan error, 3)
	var ms *http.Server
	if metrics != nil {
		ms = httpServer(metrics.Handler())
		go func() { errc <- ms.Serve(mln) }()
	}
	go func() {
		if tls {
			errc <- hs.ServeTLS(ln, *certFile, *keyFile)
		} else {
			errc <- hs.Serve(ln)
		}
	}()
	var local *http.Server
	sock := ""
	if db.Backend() == "bbolt" {
		lln, path, err := server.ListenLocal(strings.TrimPrefix(dsn, "bbolt:"))
		if err != nil {
			fmt.Fprintf(stderr, "mql serve: %v; the command line cannot attach to this server\n", err)
		} else {
			sock = path
			local = httpServer(srv.LocalHandler())
			go func() { errc <- local.Serve(lln) }()
		}
	}
	fmt.Fprintf(stderr, "mql serve: serving %s (%s) at %s: MCP at /mcp, POST /v1/query, GET /v1/watch\n", graphstore.RedactDSN(dsn), db.Backend(), url)
	if ms != nil {
		fmt.Fprintf(stderr, "mql serve: Prometheus metrics at http://%s/metrics\n", mln.Addr())
	}
	if sock != "" {
		fmt.Fprintf(stderr, "mql serve: the command line attaches through %s (the owner's, mode 0600)\n", sock)
	}
	fmt.Fprintf(stderr, "mql serve: agents need a token each: mql token create NAME %s\n", graphstore.RedactDSN(dsn))
	page := scheme + "://" + browsable(ln.Addr()) + "/"
	if *openPage {
		// The code rides in the fragment, which the browser never sends: it reaches no log and
		// no Referer. It signs in once, within a minute, as the owner.
		link := page + "#code=" + srv.SignInCode()
		fmt.Fprintf(stderr, "mql serve: the web page, signed in as the owner (this link works once, within 60 s): %s\n", link)
		if xdg, err := exec.LookPath("xdg-open"); err == nil {
			cmd := exec.Command(xdg, link)
			if err := cmd.Start(); err == nil {
				go cmd.Wait()
			} else {
				fmt.Fprintf(stderr, "mql serve: xdg-open: %v; open the link yourself\n", err)
			}
		}
	} else {
		fmt.Fprintf(stderr, "mql serve: the web page is at %s (sign in with a token; mql serve --open signs the owner in)\n", page)
	}

	sig, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var serveErr error
	select {
	case <-sig.Done():
	case serveErr = <-errc:
	}
	srv.Drain() // /readyz answers 503 from now on
	if *drainDelay > 0 {
		fmt.Fprintf(stderr, "mql serve: draining: /readyz answers 503; new connections are refused in %s\n", *drainDelay)
		// A second signal cuts the delay short.
		again, stopAgain := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		select {
		case <-again.Done():
		case <-time.After(*drainDelay):
		}
		stopAgain()
	}
	fmt.Fprintln(stderr, "mql serve: stopping: no new requests; waiting for those in flight")
	srv.Close() // ends watches and MCP notifications, so that their requests finish
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		fmt.Fprintf(stderr, "mql serve: requests still running after %s were cut off: %v\n", shutdownGrace, err)
		hs.Close()
	}
	if local != nil {
		if err := local.Shutdown(sctx); err != nil {
			local.Close()
		}
	}
	if ms != nil {
		if err := ms.Shutdown(sctx); err != nil {
			ms.Close()
		}
	}
	if err := db.Close(); err != nil {
		fmt.Fprintf(stderr, "mql serve: closing the store: %v\n", err)
		return exitFailed
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "mql serve: %v\n", serveErr)
		return exitFailed
	}
	fmt.Fprintln(stderr, "mql serve: stopped; the store is closed")
	return exitOK
}

// httpServer bounds what a slow or hostile client can hold: headers and bodies must arrive
// within their timeouts (a request's evaluation has its own bound, server.Options.Timeout), and
// idle connections are closed. There is no write timeout: /v1/watch and MCP streams are long.
// (The bytes a request may carry, and how long its evaluation may take, are server.Limits.)
func httpServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}

// browsable is the host:port a browser on this machine can reach the listener at: an
// unspecified address (0.0.0.0, ::) becomes loopback.
func browsable(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	ip := ta.IP
	if ip.IsUnspecified() {
		if ip.To4() != nil {
			ip = net.IPv4(127, 0, 0, 1)
		} else {
			ip = net.IPv6loopback
		}
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(ta.Port))
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}
