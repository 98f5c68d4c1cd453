package streammem

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestBound(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	cases := []struct {
		name, gogc, memlimit string
		want                 int64
	}{
		{"untuned", "", "", Limit},
		{"GOGC given", "200", "", math.MaxInt64},
		{"GOMEMLIMIT given", "", "1GiB", math.MaxInt64},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GOGC", c.gogc)
			t.Setenv("GOMEMLIMIT", c.memlimit)
			debug.SetMemoryLimit(math.MaxInt64)
			Bound()
			if got := debug.SetMemoryLimit(-1); got != c.want {
				t.Errorf("memory limit %d, want %d", got, c.want)
			}
		})
	}
}
