package main

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/mql-dev/mql/mcpserver"
	"github.com/mql-dev/mql/server"
)

// addLimitFlags defines mql serve's flags for the server's limits (docs/SERVE.md, "Limits"),
// each defaulting to server.DefaultLimits; check tells whether the values given are usable.
func addLimitFlags(fs *flag.FlagSet) (lim *server.Limits, check func() error) {
	d := server.DefaultLimits()
	l := d
	fs.IntVar(&l.Statements, "max-statements", d.Statements, "run at most `N` statements in one request (a /v1/query script, an MCP query call)")
	fs.Var(byteSize{&l.Body}, "max-body", "take request bodies of at most `SIZE` (a number of bytes, or with KiB, MiB, GiB)")
	fs.Var(byteSize{&l.Output}, "max-output", "answer at most `SIZE` of results to one request")
	fs.DurationVar(&l.Timeout, "timeout", d.Timeout, "stop a request's evaluation after `DURATION`")
	fs.IntVar(&l.Sessions, "max-sessions", d.Sessions, "hold at most `N` web page sessions for each principal")
	return &l, func() error {
		switch {
		case l.Statements < 1:
			return fmt.Errorf("--max-statements %d: give at least 1", l.Statements)
		case l.Timeout <= 0:
			return fmt.Errorf("--timeout %s: give a duration above 0, e.g. 30s", l.Timeout)
		case l.Sessions < 1:
			return fmt.Errorf("--max-sessions %d: give at least 1", l.Sessions)
		}
		return nil
	}
}

// addMCPLimitFlags defines `mql mcp`'s flags for the limits of its one client: the limits of
// mql serve that apply to MCP over stdio, each with the default it has there (a message is one
// line of stdin, bounded as before by mcpserver.MaxMessageBytes).
func addMCPLimitFlags(fs *flag.FlagSet) (opts *mcpserver.ServeOptions, check func() error) {
	d := mcpserver.DefaultLimits()
	o := &mcpserver.ServeOptions{Limits: d}
	body := int64(mcpserver.MaxMessageBytes)
	fs.IntVar(&o.Limits.Statements, "max-statements", d.Statements, "run at most `N` statements in one query call")
	fs.Var(byteSize{&body}, "max-body", "take messages (lines of stdin) of at most `SIZE` (a number of bytes, or with KiB, MiB, GiB)")
	fs.Var(byteSize{&o.Limits.Output}, "max-output", "answer at most `SIZE` to one tool call or resource read")
	fs.DurationVar(&o.Limits.Timeout, "timeout", d.Timeout, "stop a tool call or resource read after `DURATION`")
	return o, func() error {
		switch {
		case o.Limits.Statements < 1:
			return fmt.Errorf("--max-statements %d: give at least 1", o.Limits.Statements)
		case o.Limits.Timeout <= 0:
			return fmt.Errorf("--timeout %s: give a duration above 0, e.g. 30s", o.Limits.Timeout)
		case body > math.MaxInt32:
			return fmt.Errorf("--max-body %s: give at most 2GiB", byteSize{&body})
		}
		o.MaxMessage = int(body)
		return nil
	}
}

// byteSize is a flag of a size in bytes: 1048576, 1MiB, 512 KiB.
type byteSize struct{ n *int64 }

func (b byteSize) String() string {
	if b.n == nil {
		return ""
	}
	return strings.ReplaceAll(strings.TrimSuffix(mcpserver.Bytes(*b.n), " bytes"), " ", "")
}

func (b byteSize) Set(s string) error {
	num := strings.TrimSpace(s)
	unit := int64(1)
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"B", 1}} {
		if rest, ok := strings.CutSuffix(num, u.suffix); ok {
			num, unit = strings.TrimSpace(rest), u.n
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 1 || n > math.MaxInt64/unit {
		return fmt.Errorf("%q is not a size: give a whole number of bytes above 0, or one of KiB, MiB or GiB (1MiB)", s)
	}
	*b.n = n * unit
	return nil
}
