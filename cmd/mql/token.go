package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/server"
)

const tokenUsage = `usage:
  mql token create NAME [--expires DURATION] [DB]   issue a token for principal NAME; printed once
  mql token list [--format text|json] [DB]          list the tokens, with holder, expiry, revocation
  mql token revoke ID [DB]                          revoke a token: its next request is refused
DB is given as the argument or as --db DB, as for every command.
Tokens are for mql serve: each HTTP request carries Authorization: Bearer TOKEN and is served
as the token's principal. The store keeps only a hash of each token. Only the owner manages them;
when mql serve holds DB, these commands go through it.
`

// runToken is `mql token create|list|revoke …`.
func runToken(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) == 0 {
			io.WriteString(stderr, tokenUsage)
			return exitUsage
		}
		io.WriteString(stdout, tokenUsage)
		return exitOK
	}
	verb := args[0]
	fs := newFlags("mql token "+verb, tokenUsage, stdout, stderr)
	dbFlag := addDBFlag(fs.FlagSet)
	expires := fs.Duration("expires", 0, "the token stops working after `DURATION` (e.g. 720h); 0 for never")
	format := fs.String("format", "text", "list `FORMAT`: text or json")
	pos, code, ok := fs.parse(args[1:])
	if !ok {
		return code
	}
	own := 1
	switch verb {
	case "create", "revoke":
	case "list":
		own = 0
	default:
		fmt.Fprintf(stderr, "mql token: unknown command %q\n%s", verb, tokenUsage)
		return exitUsage
	}
	dsn, rest, err := takeDB(*dbFlag, pos, own)
	if err != nil || len(rest) != own {
		if err == nil {
			err = fmt.Errorf("%s needs %d argument(s)", verb, own)
		}
		fmt.Fprintf(stderr, "mql token %s: %v\n%s", verb, err, tokenUsage)
		return exitUsage
	}
	if *expires < 0 || (*format != "text" && *format != "json") {
		io.WriteString(stderr, tokenUsage)
		return exitUsage
	}
	var until time.Time
	if *expires > 0 {
		until = time.Now().Add(*expires).UTC()
	}

	// One set of operations, through an open store or the server that holds it.
	type ops struct {
		create func(principal string) (string, mql.Token, error)
		list   func() ([]mql.Token, error)
		revoke func(id string) error
	}
	do := func(o ops) int {
		switch verb {
		case "create":
			tok, info, err := o.create(rest[0])
			if err != nil {
				fmt.Fprintf(stderr, "mql token create: %v\n", err)
				return exitCode(err)
			}
			fmt.Fprintln(stdout, tok)
			exp := "never expires"
			if !info.Expires.IsZero() {
				exp = "expires " + info.Expires.Format(time.RFC3339)
			}
			fmt.Fprintf(stderr, "token %s for %s (%s); it is shown only this once: keep it secret\n", info.ID, info.Principal, exp)
		case "list":
			toks, err := o.list()
			if err != nil {
				fmt.Fprintf(stderr, "mql token list: %v\n", err)
				return exitCode(err)
			}
			if *format == "json" {
				json.NewEncoder(stdout).Encode(toks)
				return exitOK
			}
			tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "id\tprincipal\tcreated\texpires\tstate")
			for _, t := range toks {
				exp, state := "-", "valid"
				if !t.Expires.IsZero() {
					exp = t.Expires.Format(time.RFC3339)
					if !time.Now().Before(t.Expires) {
						state = "expired"
					}
				}
				if t.Revoked != nil {
					state = "revoked " + t.Revoked.Format(time.RFC3339) + " by " + t.RevokedBy
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.ID, t.Principal, t.Created.Format(time.RFC3339), exp, state)
			}
			tw.Flush()
		case "revoke":
			if err := o.revoke(rest[0]); err != nil {
				fmt.Fprintf(stderr, "mql token revoke: %v\n", err)
				return exitCode(err)
			}
			fmt.Fprintf(stderr, "token %s revoked\n", rest[0])
		}
		return exitOK
	}
	req := openReq{cmd: "mql token", dsn: dsn, stdout: stdout, opts: mql.Options{MustExist: true}}
	req.attach = func(c *server.Client) int {
		return do(ops{
			create: func(p string) (string, mql.Token, error) {
				r, err := c.CreateToken(ctx, p, until)
				return r.Token, r.Info, err
			},
			list:   func() ([]mql.Token, error) { return c.Tokens(ctx) },
			revoke: func(id string) error { _, err := c.RevokeToken(ctx, id); return err },
		})
	}
	db, _, code := openStore(ctx, req, stderr)
	if db == nil {
		return code
	}
	defer db.Close()
	// The command line's store is the owner's, and tokens are the owner's to give.
	owner := db.ActAs(db.Owner())
	return do(ops{
		create: func(p string) (string, mql.Token, error) {
			return owner.CreateToken(ctx, mql.TokenSpec{Principal: p, Expires: until})
		},
		list:   func() ([]mql.Token, error) { return owner.Reader().Tokens(ctx) },
		revoke: func(id string) error { _, err := owner.RevokeToken(ctx, id); return err },
	})
}
