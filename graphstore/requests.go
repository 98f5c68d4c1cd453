package graphstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
)

// Group commit across processes (PostgreSQL). Processes that share a store take turns on one
// writer lock, and a process holds it for two round trips and a build, so writers in separate
// processes would commit one after another however many there are. A write that any process
// can build (a Request: its kind and payload, which Options.Requests turns back into its
// build) need not wait its turn: its process queues it in the store (mql_requests) before it
// waits for the lock, and whoever holds the lock builds every request queued, each as its own
// transaction, in its group commit, and records each one's outcome beside it, in the same
// commit, which then waits for the disk before it releases the lock. A process that has seen
// the lock contended waits for it in shared mode first, which every such process gets at once
// when the holder is done: if its requests were built, it takes their outcomes and is done
// without holding the lock; if not, it waits for the lock itself and builds what is queued.
// docs/RELIABILITY.md tells what happens when a process fails at each step.

// Request is a write that another process sharing the store may build in its place: its kind
// and payload name the build, as this process's Options.Requests makes it.
type Request struct {
	Kind string
	// Payload encodes the request; it is called only when the request is queued for another
	// process. An error leaves the write to this process.
	Payload func() ([]byte, error)
}

// Requests builds the writes other processes queued (Request), in the process that holds the
// writer lock, and carries their refusals back to them.
type Requests interface {
	// Build returns the build of a request of kind made by by (a Write's build that also
	// returns what the request's writer gets back); ok is false for a kind this process does
	// not know, which it leaves to the process that asked.
	Build(by, kind string, payload []byte) (build func(ix *index.Index, tx *record.Tx) ([]byte, error), ok bool)
	// EncodeError writes a build's refusal for the process that asked; DecodeError reads it
	// there, as an error that errors.Is matches as the refusal was matched.
	EncodeError(err error) []byte
	DecodeError(b []byte) error
}

// Remote is the outcome of a request that another process built: its transaction (0 when
// the build refused it) and what the build returned.
type Remote struct {
	Tx     record.TxID
	Time   time.Time
	Result []byte
}

// WriteRequest is Write for a write that another process may build (see Request): build is
// its build in this process. It returns the transaction when this process built it, or the
// Remote outcome when another did; the error is the refusal either way (decoded by
// Options.Requests for a remote one). On a store that no other process writes it is Write.
func (s *Store) WriteRequest(ctx context.Context, by string, build func(ix *index.Index, tx *record.Tx) error, r Request) (*record.Tx, *Remote, error) {
	w := &writer{ctx: ctx, by: by, build: build, req: &r}
	tx, err := s.write(w)
	return tx, w.remote, err
}

// queued is a request in mql_requests.
type queued struct {
	id      []byte
	by      string
	kind    string
	payload []byte
}

// reqOutcome is what the process that built a request recorded of it.
type reqOutcome struct {
	done   bool
	tx     record.TxID
	at     time.Time
	result []byte
	err    []byte // the refusal, encoded (Requests.EncodeError)
}

// requester is a backend whose processes build each other's requests (PostgreSQL).
type requester interface {
	// follow queues reqs and waits for the lock; with wait it first waits for the process
	// holding it, if any, to finish (errServed if that built every one of reqs). It returns
	// the write transaction holding the lock, the requests queued that it may build (those of
	// reqs not built yet among them), and the outcomes of those of reqs built already.
	follow(ctx context.Context, reqs []queued, wait bool) (*writeTx, []queued, map[string]reqOutcome, error)
	// take removes the rows of ids and returns the outcomes they hold, once what they record
	// is durable; a request not built yet is withdrawn (no outcome: nobody builds it now).
	take(ctx context.Context, ids [][]byte) (map[string]reqOutcome, error)
	// queues reports whether the store has the queue (a role that could not create it in a
	// store older than it goes without).
	queues() bool
}

// reqCommit is what a group commit records in mql_requests: the outcomes of the requests it
// built for other processes, and the rows of its own requests that it built itself.
type reqCommit struct {
	ids      [][]byte
	outcomes []reqOutcome
	drop     [][]byte
	took     bool // the transaction took the outcomes of requests of this group built before
}

func (c reqCommit) empty() bool { return len(c.ids) == 0 && len(c.drop) == 0 && !c.took }

var (
	errServed    = errors.New("every request was built by another process")
	errNotQueued = errors.New("a request that cannot be queued")
)

// shipment is a group of requests on its way: the backend, this group's requests queued
// (mine, by id), those of them still queued when this process took the lock (left: the group
// builds them), and the other processes' requests it builds (foreign).
type shipment struct {
	rq      requester
	mine    map[string]*writer
	left    map[string]bool
	foreign []*writer
	took    bool // outcomes of mine were taken (in the transaction, if it holds the lock)
}

// requestsOf returns the backend's requester if every writer of group is a request, or nil.
func (s *Store) requestsOf(group []*writer) requester {
	rq, ok := s.be.(requester)
	if !ok || s.requests == nil || !rq.queues() {
		return nil
	}
	for _, w := range group {
		if w.req == nil || w.genesis {
			return nil
		}
	}
	return rq
}

// contendedWait is how long a wait for the lock says that other processes write too.
const contendedWait = 2 * time.Millisecond

// lead begins the write transaction of a group of requests: it queues them and waits for the
// lock (first for its holder to finish, when other processes were seen writing). It returns
// errServed when every request was built by another process (their writers are done),
// errNotQueued when a request cannot be queued (nothing was), or the write transaction with
// what the group commit builds: the group's requests not built yet and the other processes'
// requests queued.
func (s *Store) lead(ctx context.Context, rq requester, group []*writer) (*writeTx, *shipment, error) {
	sh := &shipment{rq: rq, mine: map[string]*writer{}}
	var reqs []queued
	for _, w := range group {
		if w.done {
			continue
		}
		p, err := w.req.Payload()
		if err != nil {
			return nil, nil, errNotQueued
		}
		w.qid = s.requestID()
		reqs = append(reqs, queued{id: w.qid, by: w.by, kind: w.req.Kind, payload: p})
		sh.mine[string(w.qid)] = w
	}
	start := time.Now()
	wt, pending, served, err := rq.follow(ctx, reqs, s.contended.Load())
	for id, o := range served {
		sh.mine[id].outcome(s, o)
	}
	sh.took = len(served) > 0
	if err != nil {
		// Built elsewhere, or given up: the rows say which.
		sh.settle(s, false, err)
		return nil, nil, err
	}
	sh.left = map[string]bool{}
	for _, q := range pending {
		if _, ok := sh.mine[string(q.id)]; ok {
			sh.left[string(q.id)] = true
			continue
		}
		if w := s.foreignWriter(q); w != nil {
			sh.foreign = append(sh.foreign, w)
		}
	}
	s.contended.Store(len(served) > 0 || len(sh.foreign) > 0 || time.Since(start) > contendedWait)
	return wt, sh, nil
}

// outcome gives w its request's outcome, recorded by the process that built it.
func (w *writer) outcome(s *Store, o reqOutcome) {
	w.remote, w.tx, w.err, w.done = &Remote{Tx: o.tx, Time: o.at, Result: o.result}, nil, nil, true
	if o.err != nil {
		w.err = s.requests.DecodeError(o.err)
	}
}

// record is what the group commit records of the requests, its writers built and refused.
func (sh *shipment) record(s *Store) reqCommit {
	var c reqCommit
	if sh == nil {
		return c
	}
	c.took = sh.took
	for id := range sh.left {
		c.drop = append(c.drop, []byte(id))
	}
	for _, w := range sh.foreign {
		c.ids = append(c.ids, w.qid)
		c.outcomes = append(c.outcomes, s.outcomeOf(w))
	}
	return c
}

// settle gives every writer of mine without an outcome the one its row holds, once the
// group's write transaction has ended. If the group did not commit (committed false), the
// requests it held to build itself (left) are withdrawn too, so that nobody builds them later,
// unless another process built them meanwhile: their writers get that outcome. A writer
// whose request nobody built gets cause.
func (sh *shipment) settle(s *Store, committed bool, cause error) {
	if sh == nil || sh.mine == nil {
		return
	}
	var ids [][]byte
	for id, w := range sh.mine {
		if !w.done || sh.left[id] && !committed {
			ids = append(ids, []byte(id))
		}
	}
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	outs, err := sh.rq.take(ctx, ids)
	for _, id := range ids {
		w := sh.mine[string(id)]
		o, ok := outs[string(id)]
		switch {
		case err != nil:
			w.err = StorageFailure(fmt.Errorf("%w: the write was queued for the process holding the writer lock, and reading what became of it failed: %w", errCommitUnknown, err))
			w.tx = nil
		case ok && o.done:
			w.outcome(s, o)
		case w.done:
			// Its failure stands: the request was withdrawn.
		case cause == nil || errors.Is(cause, errServed):
			w.err = StorageFailure(errors.New("the write was queued for the process holding the writer lock, which recorded no outcome for it: nothing was written"))
		default:
			w.err = cause
		}
		w.done = true
	}
}

// foreignWriter is a writer of this group for another process's request q, or nil if this
// process does not know q's kind (it stays queued for its own process).
func (s *Store) foreignWriter(q queued) *writer {
	build, ok := s.requests.Build(q.by, q.kind, q.payload)
	if !ok {
		return nil
	}
	w := &writer{ctx: context.Background(), by: q.by, qid: q.id}
	w.build = func(ix *index.Index, tx *record.Tx) error {
		res, err := build(ix, tx)
		w.result = res
		return err
	}
	return w
}

// outcomeOf is what the group commit records for a foreign writer's process.
func (s *Store) outcomeOf(w *writer) reqOutcome {
	o := reqOutcome{done: true, result: w.result}
	if w.panicked != nil {
		// Another process's build does not panic in this one: it is that request's refusal.
		w.err = fmt.Errorf("build panicked: %v", w.panicked)
		w.panicked = nil
	}
	if w.err != nil || w.tx == nil {
		if w.err == nil {
			w.err = errors.New("not built")
		}
		o.err = s.requests.EncodeError(w.err)
		return o
	}
	o.tx, o.at = w.tx.ID, w.tx.Time
	return o
}

// requestID names one request of this process: its token and a counter.
func (s *Store) requestID() []byte {
	n := s.requestSeq.Add(1)
	id := make([]byte, 0, len(s.requestToken)+8)
	id = append(id, s.requestToken...)
	return binary.BigEndian.AppendUint64(id, n)
}
