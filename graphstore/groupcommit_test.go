package graphstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
)

// TestGroupCommitIsolation: concurrent writers share group commits, yet a build that fails
// fails only its own writer, every other transaction is stored with its own id, each build saw
// every transaction before it, and a reopened store holds exactly the acknowledged ones.
func TestGroupCommitIsolation(t *testing.T) {
	eachBackend(t, func(t *testing.T, bc backendCase) {
		dsn := bc.newDSN(t)
		s := mustOpen(t, dsn, Options{})
		const writers, each = 12, 6
		refused := errors.New("refused by build")
		var wg sync.WaitGroup
		var mu sync.Mutex
		okCount, badCount := 0, 0
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				v := 0
				for i := 0; i < each; i++ {
					if (w+i)%4 == 0 {
						_, err := s.Write(context.Background(), "owner", func(*index.Index, *record.Tx) error { return refused })
						mu.Lock()
						if !errors.Is(err, refused) {
							t.Errorf("failed build: %v", err)
						}
						badCount++
						mu.Unlock()
						continue
					}
					v++
					_, err := s.Write(context.Background(), "owner", countingClaim(fmt.Sprintf("g%d", w), v))
					mu.Lock()
					if err != nil {
						t.Error(err)
					}
					okCount++
					mu.Unlock()
				}
			}(w)
		}
		wg.Wait()
		if badCount == 0 {
			t.Fatal("no build failed")
		}
		checkCounting(t, txsOf(s), 1+okCount)
		checkSound(t, s)
		if !bc.persistent {
			s.Close()
			return
		}
		s.Close()
		s = mustOpen(t, dsn, Options{})
		defer s.Close()
		checkCounting(t, txsOf(s), 1+okCount)
	})
}
