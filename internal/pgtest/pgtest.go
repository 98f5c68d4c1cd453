// Package pgtest gives tests a PostgreSQL database of their own on the server named by
// MQL_TEST_POSTGRES, which .ci/run starts and sets.
package pgtest

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	_ "github.com/lib/pq" // the postgres driver
)

// Server returns the DSN of the test server, or skips the test with how to run it.
func Server(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("MQL_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("set MQL_TEST_POSTGRES=postgres://user@host:port/db?sslmode=disable to run the PostgreSQL tests; .ci/run starts a server and sets it")
	}
	return dsn
}

// Database creates a database of its own for one test, drops it when the test ends, and
// returns its DSN; it skips when there is no test server.
func Database(t testing.TB) string {
	t.Helper()
	server := Server(t)
	db, err := sql.Open("postgres", server)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rnd [6]byte
	rand.Read(rnd[:])
	name := "mqltest_" + hex.EncodeToString(rnd[:])
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("postgres", server)
		if err != nil {
			t.Error(err)
			return
		}
		defer db.Close()
		if _, err := db.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}
