package graphstore

import "sync"

// notifier tells subscribers that the committed head moved. A subscriber's channel holds at
// most one pending signal: a slow subscriber misses nothing, it only reads several
// transactions at once when it wakes.
type notifier struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

func (n *notifier) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	if n.subs == nil {
		n.subs = map[chan struct{}]struct{}{}
	}
	n.subs[ch] = struct{}{}
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
