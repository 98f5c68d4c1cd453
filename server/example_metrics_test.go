package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/server"
)

// The metrics of a server: commits are counted through mql.Options.OnCommit (here the
// genesis and one assertion), requests by the server (Options.Metrics), and the handler is
// served on a listener of its own.
func ExampleNewMetrics() {
	ctx := context.Background()
	metrics := server.NewMetrics(server.MetricsOptions{})
	db, _ := mql.Open(ctx, "memory:", mql.Options{OnCommit: metrics.ObserveCommit})
	defer db.Close()
	srv := server.New(db, db, server.Options{Metrics: metrics})
	defer srv.Close()
	_ = srv.Handler() // the API, served as usual, counts its requests
	ms := httptest.NewServer(metrics.Handler())
	defer ms.Close()

	db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(44), By: "owner"})

	resp, err := http.Get(ms.URL + "/metrics")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		for _, name := range []string{"mql_transactions_committed_total ", "mql_claims{state=\"live\"}"} {
			if strings.HasPrefix(sc.Text(), name) {
				fmt.Println(sc.Text())
			}
		}
	}
	// Output:
	// mql_claims{state="live"} 1
	// mql_transactions_committed_total 2
}
