package graphstore

import (
	"context"
	"sync"
)

// notifier tells subscribers that the committed head moved. A subscriber's channel holds at
// most one pending signal: a slow subscriber misses nothing, it only reads several
// transactions at once when it wakes.
type notifier struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
	wake chan struct{} // signalled when the first subscriber arrives (waitWatched)
}

func (n *notifier) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	if n.subs == nil {
		n.subs = map[chan struct{}]struct{}{}
	}
	n.subs[ch] = struct{}{}
	if n.wake != nil {
		select {
		case n.wake <- struct{}{}:
		default:
		}
	}
	n.mu.Unlock()
	return ch, func() {
		n.mu.Lock()
		delete(n.subs, ch)
		n.mu.Unlock()
	}
}

// watched reports whether anyone subscribes.
func (n *notifier) watched() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.subs) > 0
}

// waitWatched returns true once someone subscribes (at once if someone does), false if ctx
// ends first.
func (n *notifier) waitWatched(ctx context.Context) bool {
	for {
		n.mu.Lock()
		if len(n.subs) > 0 {
			n.mu.Unlock()
			return true
		}
		if n.wake == nil {
			n.wake = make(chan struct{}, 1)
		}
		wake := n.wake
		n.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return false
		}
	}
}

func (n *notifier) notify() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for ch := range n.subs {
		select {
		case ch <- struct{}{}:
		default: // a signal is already pending
		}
	}
}

// Subscribe returns a channel that receives a signal after transactions are committed by this
// process, or loaded from other processes by Refresh, and a function that ends the
// subscription. Signals coalesce: after one, read everything up to the head.
func (s *Store) Subscribe() (<-chan struct{}, func()) { return s.commits.subscribe() }
