package pgkv

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// pool keeps the connections snapshots run on. A snapshot that ends gives its connection back
// still in its transaction (dirty): the next snapshot on it sends the ROLLBACK in its first
// round trip, and a connection left dirty for long is rolled back by the pool, so that an
// idle process holds no snapshot back from vacuum. A connection that failed is closed.
type pool struct {
	s    *Store
	mu   sync.Mutex
	idle []idleConn
	slot chan struct{} // one token per open connection, at most max
	stop chan struct{}
	done chan struct{}
}

type idleConn struct {
	c     *pgx.Conn
	dirty bool
	since time.Time
}

// dirtyFor is how long a connection may sit idle in a transaction.
const dirtyFor = 20 * time.Millisecond

func newPool(s *Store, max int) *pool {
	p := &pool{s: s, slot: make(chan struct{}, max), stop: make(chan struct{}), done: make(chan struct{})}
	go p.janitor()
	return p
}

func (p *pool) take() (idleConn, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.idle); n > 0 {
		ic := p.idle[n-1]
		p.idle = p.idle[:n-1]
		return ic, true
	}
	return idleConn{}, false
}

// getDirty returns an idle connection (dirty: still in the transaction of the snapshot that
// last used it), or a new one when fewer than max are open, or waits.
func (p *pool) getDirty(ctx context.Context) (*pgx.Conn, bool, error) {
	if ic, ok := p.take(); ok {
		return ic.c, ic.dirty, nil
	}
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		select {
		case p.slot <- struct{}{}:
			c, err := p.s.connect(ctx)
			if err != nil {
				<-p.slot
				return nil, false, err
			}
			return c, false, nil
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-t.C:
			if ic, ok := p.take(); ok {
				return ic.c, ic.dirty, nil
			}
		}
	}
}

// get returns a connection out of any transaction.
func (p *pool) get(ctx context.Context) (*pgx.Conn, error) {
	c, dirty, err := p.getDirty(ctx)
	if err != nil || !dirty {
		return c, err
	}
	if _, err := c.Exec(ctx, "ROLLBACK"); err != nil {
		p.discard(c)
		return nil, err
	}
	return c, nil
}

// put gives back a connection, out of any transaction or (dirty) in a read-only one.
func (p *pool) put(c *pgx.Conn, dirty bool) {
	if c.IsClosed() || p.s.closed.Load() {
		p.discard(c)
		return
	}
	p.mu.Lock()
	p.idle = append(p.idle, idleConn{c, dirty, time.Now()})
	p.mu.Unlock()
}

// discard closes a connection taken from the pool.
func (p *pool) discard(c *pgx.Conn) {
	closeConn(c)
	<-p.slot
}

// janitor rolls back the connections left dirty for longer than dirtyFor.
func (p *pool) janitor() {
	defer close(p.done)
	t := time.NewTicker(dirtyFor)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		for {
			p.mu.Lock()
			var c *pgx.Conn
			for i, ic := range p.idle {
				if ic.dirty && time.Since(ic.since) >= dirtyFor {
					c = ic.c
					p.idle = append(p.idle[:i], p.idle[i+1:]...)
					break
				}
			}
			p.mu.Unlock()
			if c == nil {
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := c.Exec(ctx, "ROLLBACK")
			cancel()
			if err != nil {
				p.discard(c)
				continue
			}
			p.put(c, false)
		}
	}
}

func (p *pool) close() {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, ic := range idle {
		p.discard(ic.c)
	}
}

// closeConn closes c without waiting long for a server that does not answer.
func closeConn(c *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c.Close(ctx)
}
