module github.com/mql-dev/mql

go 1.26

require (
	github.com/alecthomas/participle/v2 v2.1.4 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cayleygraph/cayley v0.7.7-0.20240706181042-81dcd7d73e45 // indirect
	github.com/cayleygraph/quad v1.3.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/chzyer/readline v1.5.1 // indirect
	github.com/creack/pty v1.1.24 // indirect
	github.com/hidal-go/hidalgo v0.3.0 // indirect
	github.com/lib/pq v1.10.9 // indirect
	github.com/prometheus/client_golang v1.19.1 // indirect
	github.com/prometheus/client_model v0.5.0 // indirect
	github.com/prometheus/common v0.48.0 // indirect
	github.com/prometheus/procfs v0.12.0 // indirect
	github.com/tylertreat/BoomFilters v0.0.0-20210315201527-1a82519a3e43 // indirect
	go.etcd.io/bbolt v1.3.10 // indirect
	golang.org/x/sys v0.22.0 // indirect
	google.golang.org/protobuf v1.34.2 // indirect
)
