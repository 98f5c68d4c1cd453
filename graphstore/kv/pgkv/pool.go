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
// last used it; kept: it was idle, so the server may have ended its session since), or a new
// one when fewer than max are open, or waits.
func (p *pool) getDirty(ctx context.Context) (c *pgx.Conn, dirty, kept bool, err error) {
	if ic, ok := p.take(); ok {
		return ic.c, ic.dirty, true, nil
	}
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		select {
		case p.slot <- struct{}{}:
			c, err := p.s.connect(ctx)
			if err != nil {
				<-p.slot
				return nil, false, false, err
			}
			return c, false, false, nil
		case <-ctx.Done():
			return nil, false, false, ctx.Err()
		case <-t.C:
			if ic, ok := p.take(); ok {
				return ic.c, ic.dirty, true, nil
			}
		}
	}
}

// get returns a connection out of any transaction.
func (p *pool) get(ctx context.Context) (*pgx.Conn, error) {
	for tries := 0; ; tries++ {
		c, dirty, kept, err := p.getDirty(ctx)
		if err != nil || !dirty {
			return c, err
		}
		_, err = c.Exec(ctx, "ROLLBACK")
		if err == nil {
			return c, nil
		}
		dead := c.IsClosed()
		p.discard(c)
		if !p.retry(ctx, kept, dead, tries) {
			return nil, err
		}
	}
}

// retry says whether a statement that failed on a connection taken from the pool may run again
// on another: only when nothing can have happened (the connection was idle and the server had
// ended its session meanwhile: a restart, an administrator, a timeout), never more times than
// there can be idle connections, so that a server that is down fails fast.
func (p *pool) retry(ctx context.Context, kept, dead bool, tries int) bool {
	return kept && dead && ctx.Err() == nil && tries < cap(p.slot)
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
