package pgkv

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// pool keeps the connections snapshots run on. A connection goes back to it only when it is
// out of any transaction; one that failed is closed instead.
type pool struct {
	s    *Store
	mu   sync.Mutex
	idle []*pgx.Conn
	slot chan struct{} // one token per open connection, at most max
}

func newPool(s *Store, max int) *pool {
	return &pool{s: s, slot: make(chan struct{}, max)}
}

// get returns an idle connection, or a new one when fewer than max are open, or waits.
func (p *pool) get(ctx context.Context) (*pgx.Conn, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	select {
	case p.slot <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	default:
		// Every connection is in use: wait for one to come back, or for a slot.
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case p.slot <- struct{}{}:
				goto dial
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-t.C:
				p.mu.Lock()
				if n := len(p.idle); n > 0 {
					c := p.idle[n-1]
					p.idle = p.idle[:n-1]
					p.mu.Unlock()
					return c, nil
				}
				p.mu.Unlock()
			}
		}
	}
dial:
	c, err := p.s.connect(ctx)
	if err != nil {
		<-p.slot
		return nil, err
	}
	return c, nil
}

// put gives back a connection that is out of any transaction.
func (p *pool) put(c *pgx.Conn) {
	if c.IsClosed() || p.s.closed.Load() {
		p.discard(c)
		return
	}
	p.mu.Lock()
	p.idle = append(p.idle, c)
	p.mu.Unlock()
}

// discard closes a connection taken from the pool.
func (p *pool) discard(c *pgx.Conn) {
	closeConn(c)
	<-p.slot
}

func (p *pool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, c := range idle {
		p.discard(c)
	}
}

// closeConn closes c without waiting long for a server that does not answer.
func closeConn(c *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c.Close(ctx)
}
