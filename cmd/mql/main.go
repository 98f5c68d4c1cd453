// Command mql is the command line of mql, an embedded graph-database memory for AI agents:
// an interactive REPL, one-shot statements (-c), scripts (-f, piped stdin), N-Quads import
// and export, and a demo. Run `mql -h` for usage and exit codes; docs/CLI.md documents it.
package main

import (
	"context"
	"os"
)

func main() { os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
