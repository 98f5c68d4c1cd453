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
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mql-dev/mql/server"
)

// defaultListen is where `mql serve` listens unless told otherwise: loopback only.
const defaultListen = "127.0.0.1:7411"

// shutdownGrace bounds how long a stopping server waits for requests in flight.
const shutdownGrace = 10 * time.Second

const serveUsage = `usage: mql serve [--listen ADDR] [--tls-cert FILE --tls-key FILE] [--log text|json] [DB | --db DB]
Serves DB to a team: MCP at /mcp, the language at POST /v1/query, changes at GET /v1/watch, each
request as the principal of its bearer token (mql token create NAME DB); the command line attaches
over a local socket beside a bbolt store. Stops on SIGINT or SIGTERM, letting requests finish.
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
	dbFlag := addDBFlag(fs.FlagSet)
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	dsn, _, err := takeDB(*dbFlag, pos, 0)
	if err != nil {
		fmt.Fprintf(stderr, "mql serve: %v\n", err)
		fs.usage(stderr)
		return exitUsage
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

	db, dsn, code := openStore(ctx, openReq{cmd: "mql serve", dsn: dsn, stdout: stdout, announce: true}, stderr)
	if db == nil {
		return code
	}
	defer db.Close()

	log := slog.New(handler)
	srv := server.New(db, db, server.Options{Logger: log, Store: displayDSN(dsn)})
	defer srv.Close()
	hs := httpServer(srv.Handler())
	errc := make(chan error, 2)
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
	scheme := "http"
	if tls {
		scheme = "https"
	}
	fmt.Fprintf(stderr, "mql serve: serving %s (%s) at %s://%s: MCP at /mcp, POST /v1/query, GET /v1/watch\n", displayDSN(dsn), db.Backend(), scheme, ln.Addr())
	if sock != "" {
		fmt.Fprintf(stderr, "mql serve: the command line attaches through %s (the owner's, mode 0600)\n", sock)
	}
	fmt.Fprintf(stderr, "mql serve: agents need a token each: mql token create NAME %s\n", displayDSN(dsn))

	sig, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var serveErr error
	select {
	case <-sig.Done():
	case serveErr = <-errc:
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
func httpServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// displayDSN hides a PostgreSQL password.
func displayDSN(dsn string) string {
	if i := strings.Index(dsn, "://"); i >= 0 {
		rest := dsn[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if colon := strings.Index(rest[:at], ":"); colon >= 0 {
				return dsn[:i+3] + rest[:colon] + ":***" + rest[at:]
			}
		}
	}
	return dsn
}
