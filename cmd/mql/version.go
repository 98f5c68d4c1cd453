package main

import (
	"fmt"
	"io"
	"runtime/debug"
)

// version is the module version the binary was built from, or "devel".
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return v
		}
	}
	return "devel"
}

func runVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		fmt.Fprintln(stdout, "usage: mql version  (also mql --version, mql -V)\nPrints the version of mql.")
		return exitOK
	}
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: mql version  (also mql --version, mql -V)")
		return exitUsage
	}
	fmt.Fprintf(stdout, "mql %s\n", version())
	return exitOK
}
