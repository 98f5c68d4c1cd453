// Package mcpserver serves an mql memory over the Model Context Protocol, so that an agent in
// any language, or any MCP client, can use one shared mql store.
//
// A server acts as one principal, fixed when it is made: every write it makes is recorded as
// made by that principal (no tool takes a "by" argument), and every read is made as that
// principal, so a claim seen by others only stays invisible through every tool. It offers the
// tools assert, revoke, derive, review, query, context, why and impact, and two resources: the
// store's statistics (mql://stats) and the language reference (mql://language). Errors are
// tool errors (CallToolResult.IsError) carrying mql's message; the server itself never fails
// because of what a tool call asked.
//
// The server uses only *mql.DB, so it works on every backend; on PostgreSQL, several servers
// (one per agent, in separate processes) share one memory. `mql mcp` runs Serve over stdio;
// docs/MCP.md shows how to register it with an MCP client.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/query"
)

// server is the state behind one MCP server: the store and the principal it acts as.
type server struct {
	principal string
	act       mql.Actor      // the principal's: every tool but query, and the resources, call it
	sess      *query.Session // the query tool's statements, evaluated acting as the principal
	embed     query.Embedder // nil: none (Options.Embedder)
	lim       Limits
}

// New returns an MCP server for db that acts as principal as ("" for the store's owner). The
// principal must be recorded in the store (Check says whether it is); if it is not, every tool
// call fails with mql's "unknown principal" error. Its tool calls have the default Limits.
func New(db *mql.DB, as string) *mcp.Server { return NewLimited(db, as, Limits{}) }

// NewLimited is New with the limits lim on every tool call.
func NewLimited(db *mql.DB, as string, lim Limits) *mcp.Server {
	return NewWith(db, as, Options{Limits: lim})
}

// Options are what a server may be given beyond its store and principal.
type Options struct {
	// Limits bound every tool call (zero fields: the defaults).
	Limits Limits
	// Embedder, if set, embeds the claims asserted without a vector and the search texts, as a
	// query.Session with it does (query.EmbedClaim, query.EmbedSearch).
	Embedder query.Embedder
}

// NewWith is New with opts.
func NewWith(db *mql.DB, as string, opts Options) *mcp.Server {
	if as == "" {
		as = db.Owner()
	}
	s := &server{principal: as, act: db.ActAs(as), sess: query.NewSession(db, as), embed: opts.Embedder, lim: opts.Limits.orDefaults()}
	if opts.Embedder != nil {
		s.sess.EmbedWith(opts.Embedder)
	}
	srv := mcp.NewServer(&mcp.Implementation{
		Name:    "mql",
		Title:   "mql memory",
		Version: version(),
	}, &mcp.ServerOptions{
		Instructions:       instructions(as),
		SubscribeHandler:   subscribe,
		UnsubscribeHandler: unsubscribe,
	})
	srv.AddReceivingMiddleware(s.bound)
	s.addTools(srv)
	s.addResources(srv)
	s.addReviewQueue(srv)
	return srv
}

// Check reports whether db knows the principal as ("" for the owner), so that a server acting
// as it can work; the error says how to record it.
func Check(ctx context.Context, db *mql.DB, as string) error {
	if as == "" {
		return nil
	}
	_, err := db.ActAs(as).Reader().Stats(ctx)
	return err
}

// Serve runs an MCP server for db acting as principal as ("" for the owner) over in and out
// (newline-delimited JSON-RPC, as on stdio), until the client closes in or ctx is done. When
// in ends, every request read from it is answered before Serve returns. It returns nil when
// the client disconnects, and an error at once if the principal is unknown.
// A line that is not a JSON-RPC message gets a JSON-RPC error response (-32700 parse error,
// -32600 invalid request; see lineFilter) and the session goes on; so does a line longer than
// MaxMessageBytes, which is discarded.
func Serve(ctx context.Context, db *mql.DB, as string, in io.Reader, out io.Writer) error {
	return ServeWith(ctx, db, as, in, out, ServeOptions{})
}

// ServeOptions configure ServeWith. A zero field means its default.
type ServeOptions struct {
	// Limits bound each tool call and resource read (DefaultLimits).
	Limits Limits
	// MaxMessage bounds the bytes of one message, one line, from the client (MaxMessageBytes).
	MaxMessage int
}

// ServeWith is Serve with options: `mql mcp` sets them from its limit flags.
func ServeWith(ctx context.Context, db *mql.DB, as string, in io.Reader, out io.Writer, opts ServeOptions) error {
	if err := Check(ctx, db, as); err != nil {
		return err
	}
	if opts.MaxMessage <= 0 {
		opts.MaxMessage = MaxMessageBytes
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := newLockedWriter(out)
	// The filter bounds each line itself, so the SDK's own cap is off. Returning (cancel)
	// releases an end of input the filter still holds back for unanswered requests.
	t := &mcp.IOTransport{Reader: io.NopCloser(newLineFilter(in, w, opts.MaxMessage, ctx.Done())), Writer: w, MaxLineLength: -1}
	srv := NewLimited(db, as, opts.Limits)
	go Watch(ctx, srv, db, as, 200*time.Millisecond)
	err := srv.Run(ctx, t)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Path == "github.com/mql-dev/mql" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

func instructions(as string) string {
	return fmt.Sprintf(`mql is a shared memory of typed claims, Subject.predicate = value, kept by a team of agents and people. Every claim version has a stable reference Subject.predicate@N, the principal who asserted it, its sources, a kind (observed, inferred or confirmed), a confidence in [0,1] and a state: live (current), superseded, revoked, expired or contested. Nothing is ever overwritten: history, provenance and revocations stay queryable.

You act as the principal %q. Every write is recorded as made by %s, and you see only what %s may see.

How to use it:
- Before reasoning about some subjects, call context with them (or with a question, when you do not know the subjects), and cite claims by their references (Klarveld.price_per_seat@2).
- Record what you read with assert, naming the source (a URL or document id with its revision) and, if you can, the exact excerpt.
- A newer value for the same Subject.predicate supersedes the old one; use revoke only to declare an exact version wrong.
- Record a plan, decision or summary with derive, naming what it rests on; when an input changes, impact lists what needs review, and review records that it still holds.
- Use why to see why something is believed, and query for any other read (live, find, history, conflicts, beliefs, revoked-by, stats). The resource mql://language is the language reference; mql://stats summarises the store.`, as, as, as)
}
