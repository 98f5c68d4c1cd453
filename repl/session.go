package repl

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mql-dev/mql/output"
	"github.com/mql-dev/mql/query"
)

// Session evaluates statements: Local wraps a *query.Session on an open store, and a client
// attached to `mql serve` implements it over the server's local socket.
type Session interface {
	// Exec evaluates the statements of src in order, calling emit with each result rendered
	// in style st, and stops at the first error (see query.Session.ExecAt).
	Exec(ctx context.Context, src Source, st output.Style, emit func(Rendered) error) error
	// ExecTx evaluates the statements of srcs, which hold no begin, commit or rollback, as one
	// transaction begun at begin (see query.Session.ExecTx): all of them or none, their
	// results, then the commit's, emitted once it has committed.
	ExecTx(ctx context.Context, begin Source, srcs []Source, st output.Style, emit func(Rendered) error) error
	// Names returns completion candidates from the store, by what they name.
	Names(ctx context.Context) (Names, error)
	// Export writes what the acting principal may see as N-Quads (\export).
	Export(ctx context.Context, w io.Writer) error
	// Import loads an N-Quads export into the store, all or nothing (\import); a session that
	// may not import (one acting as a principal other than the owner) refuses.
	Import(ctx context.Context, r io.Reader) error
	// Info says which store the session is on, which backend, and as whom (\conninfo).
	Info(ctx context.Context) (Info, error)
}

// Info describes a session's connection: \conninfo prints it.
type Info struct {
	Store     string // the DSN, or the store file
	Backend   string // memory, bbolt or postgres
	Principal string // who the session acts as
	Owner     string // the store's owner
	Head      int64  // the last transaction
	Server    string // the socket of the mql serve it is attached to; "" when it opened the store itself
}

// Names are the names of a store a session may see, by kind, for completion.
type Names struct {
	Principals []string `json:"principals"`
	Subjects   []string `json:"subjects"`
	Predicates []string `json:"predicates"`
	Keys       []string `json:"keys"` // Subject.predicate
	Refs       []string `json:"refs"` // Subject.predicate@N
	Artifacts  []string `json:"artifacts"`
}

// all is every name, for a word whose context says nothing.
func (n Names) all() []string {
	return slices.Concat(n.Principals, n.Subjects, n.Predicates, n.Keys, n.Refs, n.Artifacts)
}

// NamesOf sorts a flat list of names a store gave (principals, subjects, predicates, claim keys
// and references, artifact names) by kind. Principals and artifacts are told apart from
// subjects by the lists given; what is in none of them is a subject.
func NamesOf(flat, principals, artifacts []string) Names {
	var n Names
	isP, isA := map[string]bool{}, map[string]bool{}
	for _, p := range principals {
		isP[p] = true
	}
	for _, a := range artifacts {
		isA[a] = true
	}
	n.Principals, n.Artifacts = slices.Clone(principals), slices.Clone(artifacts)
	seen := map[string]bool{}
	for _, x := range flat {
		if seen[x] {
			continue
		}
		seen[x] = true
		switch {
		case strings.Contains(x, "@") && strings.Contains(x, "."):
			n.Refs = append(n.Refs, x)
			if k := x[:strings.LastIndexByte(x, '@')]; !seen[k] {
				seen[k] = true
				n.Keys = append(n.Keys, k)
			}
		case strings.Contains(x, "."):
			n.Keys = append(n.Keys, x)
		}
	}
	subj, pred := map[string]bool{}, map[string]bool{}
	for _, k := range n.Keys {
		s, p, _ := strings.Cut(k, ".")
		if !subj[s] {
			subj[s] = true
			n.Subjects = append(n.Subjects, s)
		}
		if !pred[p] {
			pred[p] = true
			n.Predicates = append(n.Predicates, p)
		}
	}
	for _, l := range []*[]string{&n.Principals, &n.Subjects, &n.Predicates, &n.Keys, &n.Refs, &n.Artifacts} {
		slices.Sort(*l)
		*l = slices.Compact(*l)
	}
	return n
}

// Rendered is one statement's result, rendered in an output format.
type Rendered struct {
	Statement string // canonical source of the statement
	Text      string
	Write     bool // the result is a write's receipt
}

// Local is a Session evaluating statements with a *query.Session on an open store; dsn names
// the store for \conninfo.
func Local(sess *query.Session, dsn string) Session { return local{sess, dsn} }

type local struct {
	*query.Session
	dsn string
}

func (l local) render(st output.Style, emit func(Rendered) error) func(*query.Result) error {
	return func(r *query.Result) error {
		text, err := output.Render(r, st)
		if err != nil {
			return err
		}
		return emit(Rendered{Statement: r.Statement, Text: text, Write: r.Receipt != nil})
	}
}

func (l local) Exec(ctx context.Context, src Source, st output.Style, emit func(Rendered) error) error {
	if src.parsed != nil {
		return l.Session.ExecParsed(ctx, src.parsed, src.perr, l.render(st, emit))
	}
	return l.Session.ExecAt(ctx, src.Name, src.Text, src.Line, src.Col, l.render(st, emit))
}

// ExecTx parses each source on its own, so that a long transaction (a script run with -1)
// costs the memory of its statements, not of its tokens.
func (l local) ExecTx(ctx context.Context, begin Source, srcs []Source, st output.Style, emit func(Rendered) error) error {
	var stmts []query.Stmt
	for _, src := range srcs {
		script, err := src.parsed, src.perr
		if script == nil {
			script, err = query.ParseAt(src.Name, src.Text, src.Line, src.Col)
		}
		if err != nil {
			return err
		}
		stmts = append(stmts, script.Stmts...)
	}
	return l.Session.ExecStmts(ctx, beginPos(begin), stmts, l.render(st, emit))
}

// beginPos is where a transaction began: "-1" as the file when the whole script is one.
func beginPos(begin Source) query.Position {
	return query.Position{Filename: begin.Name, Line: begin.Line, Column: begin.Col}
}

func (l local) Names(ctx context.Context) (Names, error) {
	flat, err := l.Session.Names(ctx)
	if err != nil {
		return Names{}, err
	}
	r, err := l.Session.Reader()
	if err != nil {
		return Names{}, err
	}
	ps, err := r.Principals(ctx, "")
	if err != nil {
		return Names{}, err
	}
	as, err := r.Artifacts(ctx, "")
	if err != nil {
		return Names{}, err
	}
	var pn, an []string
	for _, p := range ps {
		pn = append(pn, p.Name)
	}
	for _, a := range as {
		an = append(an, a.Name)
	}
	return NamesOf(flat, pn, an), nil
}

func (l local) Info(ctx context.Context) (Info, error) {
	db := l.Session.DB()
	head, err := db.Head(ctx)
	if err != nil {
		return Info{}, err
	}
	who := l.Session.As()
	if who == "" {
		who = db.Owner()
	}
	return Info{Store: l.dsn, Backend: db.Backend(), Principal: who, Owner: db.Owner(), Head: head}, nil
}

// stmtKind names the first statement keyword of src ("" if it starts with none): the shell
// handles begin, commit and rollback itself.
func stmtKind(src string) string {
	w, _ := firstWord(src)
	return w
}

// firstWord is the word of lowercase letters that src starts with, after blanks and comments,
// and its offset in src; "" if src starts with anything else.
func firstWord(src string) (string, int) {
	for i := 0; i < len(src); {
		switch c := src[i]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f':
			i++
		case c == '-' && i+1 < len(src) && src[i+1] == '-':
			j := strings.IndexByte(src[i:], '\n')
			if j < 0 {
				return "", 0
			}
			i += j
		default:
			j := i
			for j < len(src) && (src[j] >= 'a' && src[j] <= 'z' || src[j] == '-') {
				j++
			}
			if j < len(src) && !strings.ContainsRune(" \t\r\n;", rune(src[j])) && !(src[j] == '-' && j+1 < len(src) && src[j+1] == '-') {
				return "", 0
			}
			return src[i:j], i
		}
	}
	return "", 0
}

// mqlCommands are the commands of mql that are not statements, with how to run them, for one
// typed where a statement goes.
var mqlCommands = map[string]string{
	"token":   "mql token create NAME | list | revoke ID [DB]",
	"export":  `mql export [DB]; here, \export FILE writes what you may see`,
	"import":  `mql import FILE.nq NEWDB; here, \import FILE loads an export into a new memory: store`,
	"check":   "mql check [DB]",
	"migrate": "mql migrate OLD NEW",
	"serve":   "mql serve [DB]",
	"mcp":     "mql mcp [DB]",
	"demo":    "mql demo",
	"version": "mql version",
}

// commandError is the error for src when it starts with a command of mql rather than a
// statement (token list), or nil.
func commandError(src Source) error {
	w, off := firstWord(src.Text)
	how, ok := mqlCommands[w]
	if !ok {
		return nil
	}
	pos := srcPos(src)
	before := src.Text[:off]
	if nl := strings.LastIndexByte(before, '\n'); nl >= 0 {
		pos.Line += strings.Count(before, "\n")
		pos.Column = 1 + utf8.RuneCountInString(before[nl+1:])
	} else {
		pos.Column += utf8.RuneCountInString(before)
	}
	return &query.Error{Pos: pos, Msg: fmt.Sprintf("%q is a command of mql, not a statement: run it in a shell, as %s", w, how)}
}
