package server

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/mcpserver"
)

// MetricsOptions configure Metrics. The zero value of each field means its default.
type MetricsOptions struct {
	// HealthInterval is the least time between two computations of the memory's health
	// gauges (the stats scan, which reads every claim and artifact): a scrape in between gets
	// the last values (default 60s). The next scan also waits ten times as long as the last
	// one took, and an idle store is never scanned again.
	HealthInterval time.Duration
	// RecentRuns is the window of "recent runs" for the stale-memory rate and context
	// utilization (default 24h).
	RecentRuns time.Duration
}

// Metrics are the Prometheus metrics of one server (`mql serve --metrics`), in a registry of
// their own (never the process's default one). Their labels name surfaces, routes, MCP tools
// and outcomes from fixed sets: never a token, a claim's value, or a principal's name or
// anything it wrote. Make them with NewMetrics, pass them to New (Options.Metrics), give
// ObserveCommit to mql.Options.OnCommit, and serve Handler on a listener of its own.
type Metrics struct {
	reg  *prometheus.Registry
	opts MetricsOptions

	requests  *prometheus.CounterVec
	durations *prometheus.HistogramVec
	commits   *prometheus.CounterVec
	txs       prometheus.Counter
	shared    *prometheus.CounterVec
	group     prometheus.Histogram
	latency   prometheus.Histogram
	lockWait  prometheus.Histogram

	tools map[string]bool // the MCP tools, package mcpserver's: each its own op label
}

// NewMetrics returns the metrics of one server, with the Go runtime's and the process's.
func NewMetrics(opts MetricsOptions) *Metrics {
	if opts.HealthInterval <= 0 {
		opts.HealthInterval = time.Minute
	}
	if opts.RecentRuns <= 0 {
		opts.RecentRuns = 24 * time.Hour
	}
	m := &Metrics{reg: prometheus.NewRegistry(), opts: opts, tools: map[string]bool{}}
	for _, t := range mcpserver.ToolNames() {
		m.tools[t] = true
	}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mql_requests_total",
		Help: "Requests served, by surface (http, mcp, socket), operation (the route, or the MCP tool) and outcome.",
	}, []string{"surface", "op", "outcome"})
	m.durations = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mql_request_duration_seconds",
		Help:    "How long requests took, by surface and operation (a change feed: as long as it was open).",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"surface", "op"})
	m.commits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mql_commits_total",
		Help: "Group commits this server made, by outcome (ok, failed).",
	}, []string{"outcome"})
	m.txs = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mql_transactions_committed_total",
		Help: "Transactions this server committed (a group commit holds one or more).",
	})
	m.shared = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mql_transactions_shared_total",
		Help: "On PostgreSQL, writes one process built for another: built here for other processes (for=others), or this server's built by another process (for=this).",
	}, []string{"for"})
	m.group = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "mql_commit_group_size",
		Help:    "Transactions per group commit.",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256},
	})
	m.latency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "mql_commit_duration_seconds",
		Help:    "From a group commit's wait for the writer lock to durable.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5},
	})
	m.lockWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "mql_commit_lock_wait_seconds",
		Help:    "How long a group commit waited for the writer lock, whether it got it or not: on PostgreSQL, the advisory lock other processes' writers hold.",
		Buckets: []float64{.00001, .0001, .001, .01, .05, .1, .25, .5, 1, 2.5, 5, 10},
	})
	m.reg.MustRegister(m.requests, m.durations, m.commits, m.txs, m.shared, m.group, m.latency, m.lockWait,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in the Prometheus text format (GET /metrics).
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not found: the metrics are at GET /metrics", http.StatusNotFound)
	})
	return mux
}

// ObserveCommit records a group commit; it is mql.Options.OnCommit.
func (m *Metrics) ObserveCommit(c mql.CommitInfo) {
	m.lockWait.Observe(c.LockWait.Seconds()) // a wait that timed out too: the one to see
	if c.Failed {
		m.commits.WithLabelValues("failed").Inc()
	}
	if c.Elsewhere > 0 {
		m.shared.WithLabelValues("this").Add(float64(c.Elsewhere))
	}
	if c.ForOthers > 0 {
		m.shared.WithLabelValues("others").Add(float64(c.ForOthers))
	}
	if c.Transactions == 0 {
		return
	}
	m.commits.WithLabelValues("ok").Inc()
	m.txs.Add(float64(c.Transactions))
	m.group.Observe(float64(c.Transactions))
	m.latency.Observe(c.Duration.Seconds())
}

// observe records one request.
func (m *Metrics) observe(surface, path, what, outcome string, took time.Duration) {
	if m == nil {
		return
	}
	op := routeOf(path)
	if op == "/mcp" {
		surface, op = "mcp", m.mcpOp(what)
	}
	m.requests.WithLabelValues(surface, op, outcomeLabel(outcome)).Inc()
	m.durations.WithLabelValues(surface, op).Observe(took.Seconds())
}

// routes are the paths the server answers, as metric labels; any other path is "other", so
// that a client cannot make a label of its own.
var routes = map[string]bool{
	"/": true, "/v1/query": true, "/v1/watch": true, "/v1/catalog": true, "/v1/review-queue": true,
	"/v1/session": true, "/mcp": true, "/healthz": true, "/readyz": true, "/v1/conninfo": true,
	"/v1/export": true, "/v1/check": true, "/v1/names": true, "/v1/tokens": true, "/v1/backup": true,
}

func routeOf(path string) string {
	switch {
	case routes[path]:
		return path
	case strings.HasPrefix(path, "/static/"):
		return "/static/"
	case strings.HasPrefix(path, "/v1/tokens/") && strings.HasSuffix(path, "/revoke"):
		return "/v1/tokens/{id}/revoke" // the id is not a label
	}
	return "other"
}

// mcpMethods are the protocol's methods a client sends; others, whatever a client sends, are
// "other", as are tools that are not the server's (Metrics.tools).
var mcpMethods = map[string]bool{"initialize": true, "ping": true, "tools/list": true,
	"resources/list": true, "resources/read": true, "resources/subscribe": true,
	"resources/unsubscribe": true, "resources/templates/list": true, "prompts/list": true,
	"notifications/initialized": true, "notifications/cancelled": true}

// mcpOp is the operation of an MCP request from what the request log says of it ("mcp
// tools/call assert"): the tool of a call, else the method; "stream" for a GET or DELETE.
func (m *Metrics) mcpOp(what string) string {
	method, ok := strings.CutPrefix(what, "mcp ")
	if !ok {
		return "stream"
	}
	if tool, ok := strings.CutPrefix(method, "tools/call "); ok {
		if m.tools[tool] {
			return tool
		}
		return "other"
	}
	if mcpMethods[method] {
		return method
	}
	return "other"
}

// outcomeLabel bounds the outcomes the request log writes (its own words, error classes,
// HTTP status texts) to a fixed set.
func outcomeLabel(o string) string {
	switch o {
	case "ok", "unauthorized", "storage", "draining", "read only", "failed",
		"usage", "syntax", "evaluation", "limit", "transfer", "open", "timeout":
		return strings.ReplaceAll(o, " ", "_")
	}
	if o != "" && http.StatusText(statusOf(o)) == o {
		return strings.ToLower(strings.ReplaceAll(o, " ", "_"))
	}
	return "other"
}

// statusOf is the code of an HTTP status text, 0 for another text.
func statusOf(text string) int {
	for code := 400; code < 600; code++ {
		if http.StatusText(code) == text {
			return code
		}
	}
	return 0
}

// attach registers the store's and the memory's gauges of the server's store.
func (m *Metrics) attach(s *Server) {
	c := &storeCollector{db: s.db, opts: m.opts, log: func(err error) {
		s.log.Warn("metrics: the health gauges could not be computed", "error", err.Error())
	}}
	c.sized = s.db.Backend() != "memory"
	m.reg.MustRegister(c)
}

// ---- the store and the memory's health ----

// storeCollector reports the store and the memory's health. The counts come from one stats
// scan (mql.DB.Stats: every claim and artifact), run at most once per HealthInterval and only
// once the head moved since the last one, apart from the scrape: a scrape never waits for a
// scan, but for the very first.
// sizeTimeout bounds the scrape's question of the store's size (a query on PostgreSQL): a
// scrape waits no longer than that for a database that does not answer, and the gauge is left
// out of it.
const sizeTimeout = 2 * time.Second

type storeCollector struct {
	db    *mql.DB
	sized bool // the store has a size to report (not the memory store)
	opts  MetricsOptions
	log   func(error)

	mu       sync.Mutex
	snap     *healthSnapshot
	running  bool
	lastHead int64
}

type healthSnapshot struct {
	at      time.Time
	took    time.Duration
	head    int64
	stats   mql.Stats
	memory  mql.MemoryStats
	backlog time.Duration // the oldest artifact needing review: how long ago it was recorded
}

var (
	descHead         = prometheus.NewDesc("mql_store_head_transaction", "The last committed transaction.", nil, nil)
	descBytes        = prometheus.NewDesc("mql_store_bytes", "The store's size: a bbolt file and its write-ahead log on disk; PostgreSQL's tables of the store with their indexes.", nil, nil)
	descPending      = prometheus.NewDesc("mql_health_computed_timestamp_seconds", "When the health gauges were last computed (Unix time).", nil, nil)
	descScan         = prometheus.NewDesc("mql_health_compute_seconds", "How long the last computation of the health gauges took.", nil, nil)
	descClaims       = prometheus.NewDesc("mql_claims", "Claims (every version), by state.", []string{"state"}, nil)
	descKeys         = prometheus.NewDesc("mql_keys", "Claim keys (subject.predicate).", nil, nil)
	descPrincipals   = prometheus.NewDesc("mql_principals", "Principals recorded.", nil, nil)
	descArtifacts    = prometheus.NewDesc("mql_artifacts", "Live artifact versions.", nil, nil)
	descReview       = prometheus.NewDesc("mql_artifacts_needing_review", "Live artifact versions resting on claims or artifacts no longer live.", nil, nil)
	descStaleRate    = prometheus.NewDesc("mql_stale_rate", "Artifacts needing review over live artifacts.", nil, nil)
	descBacklog      = prometheus.NewDesc("mql_review_backlog_oldest_seconds", "How long ago the oldest artifact needing review was recorded (0 when none needs review).", nil, nil)
	descRuns         = prometheus.NewDesc("mql_recent_runs", "Runs whose first record falls in the recent window.", nil, nil)
	descStaleMemory  = prometheus.NewDesc("mql_stale_memory_rate", "Of the live claims served to recent runs that reached a decision, the share no longer live at it.", nil, nil)
	descUtilization  = prometheus.NewDesc("mql_context_utilization", "Of the claims served to recent runs that made a decision, the share the decision cited.", nil, nil)
	descMemFailures  = prometheus.NewDesc("mql_recent_memory_failures", "Recent failed runs that were served a claim stale at their decision or revoked since.", nil, nil)
	storeCollectDesc = []*prometheus.Desc{descHead, descBytes, descPending, descScan, descClaims, descKeys, descPrincipals,
		descArtifacts, descReview, descStaleRate, descBacklog, descRuns, descStaleMemory, descUtilization, descMemFailures}
)

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range storeCollectDesc {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if c.sized {
		ctx, cancel := context.WithTimeout(context.Background(), sizeTimeout)
		n, err := c.db.Size(ctx)
		cancel()
		if err == nil {
			gauge(descBytes, float64(n))
		}
	}
	s := c.snapshot()
	if s == nil {
		return // the store could not be read: no health gauges rather than wrong ones
	}
	gauge(descHead, float64(s.head))
	gauge(descPending, float64(s.at.UnixNano())/1e9)
	gauge(descScan, s.took.Seconds())
	for st, n := range s.stats.ByState {
		gauge(descClaims, float64(n), string(st))
	}
	gauge(descKeys, float64(s.stats.Keys))
	gauge(descPrincipals, float64(s.stats.Principals))
	gauge(descArtifacts, float64(s.stats.Artifacts))
	gauge(descReview, float64(s.stats.NeedsReview))
	gauge(descStaleRate, s.stats.StaleRate)
	gauge(descBacklog, s.backlog.Seconds())
	gauge(descRuns, float64(s.memory.Runs))
	gauge(descStaleMemory, s.memory.StaleMemoryRate)
	gauge(descUtilization, s.memory.ContextUtilization)
	gauge(descMemFailures, float64(s.memory.MemoryFailures))
}

// healthShare bounds the time the health scan takes on a large store: the next scan waits at
// least this many times as long as the last one took, so that scanning never takes more than
// a tenth of the time (a store of a million claims, whose scan takes a minute, is scanned every
// ten minutes).
const healthShare = 10

// snapshot returns the health gauges' last values, starting a new computation when they are
// older than the interval and the store has moved; the first scrape waits for the first one.
func (c *storeCollector) snapshot() *healthSnapshot {
	c.mu.Lock()
	snap, running := c.snap, c.running
	due := snap == nil || time.Since(snap.at) >= max(c.opts.HealthInterval, healthShare*snap.took)
	if due && !running {
		c.running = true
	}
	c.mu.Unlock()
	if !due || running {
		return snap
	}
	if snap == nil {
		c.compute()
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.snap
	}
	go c.compute()
	return snap
}

// compute runs the stats scan, unless the head has not moved since the last one.
func (c *storeCollector) compute() {
	defer func() {
		c.mu.Lock()
		c.running = false
		c.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	head, err := c.db.Head(ctx)
	if err != nil {
		c.log(err)
		return
	}
	c.mu.Lock()
	if c.snap != nil && head == c.lastHead {
		same := *c.snap
		same.at = time.Now() // nothing moved: the values stand
		c.snap = &same
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	start := time.Now()
	s := &healthSnapshot{head: head}
	if s.stats, err = c.db.Stats(ctx); err == nil {
		s.memory, err = c.db.MemoryStats(ctx, "", start.Add(-c.opts.RecentRuns))
	}
	var queue []mql.Artifact
	if err == nil {
		queue, err = c.db.Reader().ReviewQueue(ctx)
	}
	if err != nil {
		c.log(err)
		return
	}
	for _, a := range queue {
		if age := start.Sub(a.RecordedAt); age > s.backlog {
			s.backlog = age
		}
	}
	s.at, s.took = time.Now(), time.Since(start)
	c.mu.Lock()
	c.snap, c.lastHead = s, head
	c.mu.Unlock()
}
