// Package exflag checks the flags of the example programs. A value out of its range is refused
// with a message naming the flag, the value and the range, and the program exits with status 2
// before it does anything.
package exflag

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
)

// usageError is a refusal of the command line.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// Usage marks err as a refusal of the command line: Exit ends the program with status 2.
func Usage(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err}
}

// Usagef is Usage(fmt.Errorf(format, args...)).
func Usagef(format string, args ...any) error { return Usage(fmt.Errorf(format, args...)) }

// IsUsage reports whether err refuses the command line (a flag that did not parse, a value out
// of range, a store the program must not write into).
func IsUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

// Code is the exit status for a program's error: 0 for none or -help, 2 for a refused command
// line, 1 for anything else.
func Code(err error) int {
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
		return 0
	case IsUsage(err):
		return 2
	}
	return 1
}

// Exit ends the program: it prints err after the program's name to stderr (the flag package has
// already printed its own parse errors) and exits with Code(err).
func Exit(program string, err error, stderr io.Writer) {
	code := Code(err)
	if code != 0 && !errors.Is(err, errParse) {
		fmt.Fprintf(stderr, "%s: %v\n", program, err)
	}
	os.Exit(code)
}

var errParse = errors.New("the command line does not parse")

// Parse parses args; an error (which the flag set has printed with its usage) is a refusal, and
// -help is flag.ErrHelp.
func Parse(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return err
	}
	return Usage(fmt.Errorf("%w: %w", errParse, err))
}

// Check collects the refusals of a command line, so that every bad flag is named at once.
type Check struct{ errs []error }

// Int refuses v outside lo..hi; unit names what is counted ("games").
func (c *Check) Int(name string, v, lo, hi int, unit string) {
	if v < lo || v > hi {
		c.errs = append(c.errs, fmt.Errorf("-%s %d is out of range: give %d to %d %s", name, v, lo, hi, unit))
	}
}

// Float refuses v outside lo..hi, NaN and ±Inf; unit names what it measures ("bits").
func (c *Check) Float(name string, v, lo, hi float64, unit string) {
	if math.IsNaN(v) || v < lo || v > hi {
		c.errs = append(c.errs, fmt.Errorf("-%s %s is out of range: give %s to %s %s", name, num(v), num(lo), num(hi), unit))
	}
}

// Prob refuses v outside 0..1 and NaN.
func (c *Check) Prob(name string, v float64) {
	if math.IsNaN(v) || v < 0 || v > 1 {
		c.errs = append(c.errs, fmt.Errorf("-%s %s is out of range: give a probability from 0 to 1", name, num(v)))
	}
}

// Failf records a refusal that no range says, such as one between two flags.
func (c *Check) Failf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

// Err is every refusal, one a line, marked as a usage error; nil if there is none.
func (c *Check) Err() error { return Usage(errors.Join(c.errs...)) }

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
