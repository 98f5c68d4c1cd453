package graphstore

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// enginePanic is a panic or a memory fault inside the storage engine, caught by guarded.
type enginePanic struct{ value any }

func (p *enginePanic) Error() string { return fmt.Sprintf("the storage engine failed: %v", p.value) }
func (p *enginePanic) Unwrap() error { return ErrDamaged }

var errLockTimeout = errors.New("lock timeout")

// guarded runs fn, which calls into bbolt, and returns a panic inside it
// as an *enginePanic error instead of crashing the process. bbolt reads its file through a
// memory mapping and panics on what it finds inconsistent (an assertion, an invalid freelist);
// a page beyond the end of a truncated file is a SIGBUS and a wild offset a SIGSEGV, which
// SetPanicOnFault turns into panics, but only in the goroutine that sets it: fn must not hand
// its work to other goroutines.
func guarded(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = &enginePanic{r}
		}
	}()
	return fn()
}
