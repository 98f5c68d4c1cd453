package repl

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mql-dev/mql/query"
)

// Source is the text of one or more statements and where it starts in its script, so that
// positions in errors are the script's.
type Source struct {
	Name string // -c (or -c#N), a file name, <stdin>
	Text string
	Line int // where Text starts, from 1
	Col  int // in code points, from 1

	// What the Scanner's parse of Text found while it looked for the statement's end, so that
	// a session on an open store does not parse it again.
	parsed *query.Script
	perr   error
}

// At is src moved to line and column of its script (its text parsed again where it runs).
func (s Source) At(line, col int) Source {
	s.Line, s.Col, s.parsed, s.perr = line, col, nil, nil
	return s
}

// Item is what a Scanner reads: one statement, or one meta command line.
type Item struct {
	Meta bool   // Src.Text is a meta command line, trimmed, with its \ or .
	Src  Source // the statement's source, or the meta command and where it starts
}

// ErrTooLong is returned by Scanner.Next for a statement longer than query.MaxStmtBytes: the
// script stops there, without reading the statement to its end.
var ErrTooLong = errors.New("statement is longer than 1 MiB")

// Scanner reads a script a statement at a time, so that a script runs as it arrives and its
// memory is bounded by its longest statement, not its length. A ";" ends a statement at once; a
// newline ends it when what precedes is a complete statement (query.Complete) and the next line
// that holds anything does not begin with a clause keyword (query.IsClauseKeyword), so it
// splits a script exactly as the parser does. A statement ended by a newline is therefore
// returned when the next line arrives, or at the end of the input. A line that starts with \
// or . where a statement could start is a meta command.
type Scanner struct {
	r    *bufio.Reader
	name string
	line int // position of the next byte
	col  int
	buf  strings.Builder // the statement being read
	at   [2]int          // where buf starts
	// inString, inComment: where the next byte falls; blank: buf holds no token yet.
	inString, escaped, inComment, blank bool
}

// NewScanner reads the script name from r.
func NewScanner(name string, r io.Reader) *Scanner {
	sc := &Scanner{r: bufio.NewReaderSize(r, 64<<10), name: name, line: 1, col: 1}
	sc.reset()
	return sc
}

func (sc *Scanner) reset() {
	sc.buf.Reset()
	sc.at = [2]int{sc.line, sc.col}
	sc.blank = true
}

func (sc *Scanner) item() Item {
	it := Item{Src: Source{Name: sc.name, Text: sc.buf.String(), Line: sc.at[0], Col: sc.at[1]}}
	sc.reset()
	return it
}

// Next returns the next statement or meta command, io.EOF after the last, ErrTooLong (in an
// error that says where the statement starts) for a statement over 1 MiB, or the reader's
// error.
func (sc *Scanner) Next() (Item, error) {
	for {
		if sc.col == 1 && sc.buf.Len() == 0 && !sc.inString {
			if it, ok, err := sc.meta(); err != nil || ok {
				return it, err
			}
		}
		c, err := sc.r.ReadByte()
		if err == io.EOF {
			if !sc.blank {
				return sc.item(), nil
			}
			return Item{}, io.EOF
		}
		if err != nil {
			return Item{}, err
		}
		sc.buf.WriteByte(c)
		if c == '\n' {
			sc.line, sc.col = sc.line+1, 1
		} else if c&0xC0 != 0x80 {
			sc.col++
		}
		switch {
		case sc.inString:
			switch {
			case sc.escaped:
				sc.escaped = false
			case c == '\\':
				sc.escaped = true
			case c == '"':
				sc.inString = false
			}
		case sc.inComment:
			if c == '\n' {
				sc.inComment = false
				if end, ok, err := sc.lineEnd(); err != nil || ok {
					return end, err
				}
			}
		case c == '\n':
			if end, ok, err := sc.lineEnd(); err != nil || ok {
				return end, err
			}
		case c == ';':
			if sc.blank {
				sc.reset() // an empty statement
				continue
			}
			return sc.item(), nil
		case c == '-' && sc.peekIs('-'):
			sc.inComment = true
		case c == '"':
			sc.inString, sc.blank = true, false
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
		default:
			sc.blank = false
		}
		// Past twice the limit the parser would refuse it anyway; reading on would let one
		// statement hold the whole script.
		if sc.buf.Len() > 2*query.MaxStmtBytes && !sc.blank {
			return Item{}, fmt.Errorf("%s:%d:%d: %w", sc.name, sc.at[0], sc.at[1], ErrTooLong)
		}
	}
}

// lineEnd decides, at the end of a line outside a string, whether the statement read so far
// ends there: it is complete, and the next line does not continue it.
func (sc *Scanner) lineEnd() (Item, bool, error) {
	if sc.blank {
		sc.reset()
		return Item{}, false, nil
	}
	script, perr, complete := query.ParseComplete(sc.name, sc.buf.String(), sc.at[0], sc.at[1])
	if !complete {
		return Item{}, false, nil
	}
	skipped, cont, err := sc.clauseAhead()
	if err != nil {
		return Item{}, false, err
	}
	if cont {
		// What was skipped stands in the statement as newlines and spaces, so that positions
		// in it stay the script's.
		sc.buf.WriteString(skipped)
		return Item{}, false, nil
	}
	it := sc.item()
	it.Src.parsed, it.Src.perr = script, perr
	return it, true, nil
}

// clauseAhead skips the blank and comment lines that follow and reports whether the next line
// that holds anything begins with a clause keyword, which continues the statement before it.
// skipped stands for what it consumed: a newline for each line, a space for each blank. Of the
// line it stops at it consumes nothing (unless it starts with more blanks than the buffer
// holds): it is read again, as a meta command or as the start of the next statement.
func (sc *Scanner) clauseAhead() (skipped string, cont bool, err error) {
	var sk strings.Builder
	peek := func(i int) (byte, bool, error) {
		p, err := sc.r.Peek(i + 1)
		if len(p) > i {
			return p[i], true, nil
		}
		if err == io.EOF {
			err = nil
		}
		return 0, false, err
	}
	for {
		if sk.Len() > 2*query.MaxStmtBytes {
			// A statement that went on past this many lines would be refused as too long.
			return "", false, nil
		}
		i := 0
		c, ok, err := peek(i)
		for ok && (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
			if i++; i == sc.r.Size() {
				sc.r.Discard(i)
				sc.col += i
				sk.WriteString(strings.Repeat(" ", i))
				i = 0
			}
			c, ok, err = peek(i)
		}
		if err != nil || !ok {
			return sk.String(), false, err
		}
		if c == '-' {
			if c2, ok, err := peek(i + 1); err != nil || !ok || c2 != '-' {
				return sk.String(), false, err
			}
			// A comment line: skip it to its newline.
			for {
				b, err := sc.r.ReadSlice('\n')
				if err == bufio.ErrBufferFull {
					continue
				}
				if err == io.EOF {
					return sk.String(), false, nil
				}
				if err != nil {
					return sk.String(), false, err
				}
				i = len(b) - 1
				break
			}
			c = '\n'
		} else if c == '\n' {
			sc.r.Discard(i + 1)
		}
		if c == '\n' {
			sc.line, sc.col = sc.line+1, 1
			sk.WriteByte('\n')
			continue
		}
		// A word of lowercase letters that ends there ("from_x" and "by-w" are names).
		w := i
		for ; w-i <= maxClauseWord; w++ {
			c, ok, err := peek(w)
			if err != nil {
				return sk.String(), false, err
			}
			if !ok || c < 'a' || c > 'z' {
				if ok && c == '-' {
					// "by--note" is "by" and a comment; "by-w" is a name.
					c2, ok2, err := peek(w + 1)
					if err != nil {
						return sk.String(), false, err
					}
					if ok2 && c2 == '-' {
						break
					}
				}
				if ok && isNameByte(c) {
					return sk.String(), false, nil
				}
				break
			}
		}
		p, _ := sc.r.Peek(w)
		return sk.String(), w > i && query.IsClauseKeyword(string(p[i:w])), nil
	}
}

// maxClauseWord is longer than any clause keyword: a longer word is not one.
const maxClauseWord = 16

// isNameByte reports whether c may go on a name (or a keyword) after a letter: letters, digits,
// "_", ":", "/", "-" and the bytes of non-ASCII letters.
func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == ':' || c == '/' || c == '-' || c >= 0x80
}

func (sc *Scanner) peekIs(b byte) bool {
	p, err := sc.r.Peek(1)
	return err == nil && p[0] == b
}

// meta reads a meta command if the line about to be read is one: \word or .word after
// optional spaces.
func (sc *Scanner) meta() (Item, bool, error) {
	n := 0
	for {
		p, err := sc.r.Peek(n + 2)
		if len(p) < n+2 {
			if err != nil && err != io.EOF {
				return Item{}, false, err
			}
			return Item{}, false, nil
		}
		if p[n] == ' ' || p[n] == '\t' {
			n++
			continue
		}
		if (p[n] != '\\' && p[n] != '.') || !isMetaStart(p[n+1]) {
			return Item{}, false, nil
		}
		break
	}
	line, err := sc.r.ReadString('\n')
	if err != nil && err != io.EOF {
		return Item{}, false, err
	}
	it := Item{Meta: true, Src: Source{Name: sc.name, Text: strings.TrimSpace(line), Line: sc.line, Col: n + 1}}
	if strings.HasSuffix(line, "\n") {
		sc.line++
	} else {
		sc.col += len([]rune(line))
	}
	sc.reset()
	return it, true, nil
}

func isMetaStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '?'
}

// ScriptWrites reports whether running src as a script could change the store: it holds a
// write statement (principal, grant, assert, revoke, confirm, derive, review, decay) or an
// \import. A script that does not parse counts the statements that did, as a script runs
// those before the error. The command line opens the store for a script that only reads
// without creating it.
func ScriptWrites(src string) bool {
	sc := NewScanner("", strings.NewReader(src))
	for {
		it, err := sc.Next()
		if err != nil {
			return false
		}
		if ItemWrites(it) {
			return true
		}
	}
}

// ItemWrites reports whether a script item could change the store: a write statement, or
// \import.
func ItemWrites(it Item) bool { return itemWrites(it, 0) }

// StatementError is the syntax error of a statement, as running it reports it, or nil (also for
// a meta command).
func StatementError(it Item) error {
	if it.Meta {
		return nil
	}
	if it.Src.parsed != nil || it.Src.perr != nil {
		return it.Src.perr
	}
	_, err := query.ParseAt(it.Src.Name, it.Src.Text, it.Src.Line, it.Src.Col)
	return err
}

func itemWrites(it Item, depth int) bool {
	if it.Meta {
		f := strings.Fields(it.Src.Text[1:])
		if len(f) == 0 {
			return false
		}
		switch strings.ToLower(f[0]) {
		case "import":
			return true
		case "i", "include", "read":
			// The script it runs writes, if it can be read (if not, running it fails).
			path := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(it.Src.Text[1:]), f[0]))
			file, err := os.Open(path)
			if err != nil || depth >= maxInclude {
				return false
			}
			defer file.Close()
			sc := NewScanner(path, file)
			for {
				it, err := sc.Next()
				if err != nil {
					return false
				}
				if itemWrites(it, depth+1) {
					return true
				}
			}
		}
		return false
	}
	script, _ := query.Parse("", it.Src.Text)
	for _, st := range script.Stmts {
		if !query.IsRead(st) && !query.IsControl(st) {
			return true
		}
	}
	return false
}
