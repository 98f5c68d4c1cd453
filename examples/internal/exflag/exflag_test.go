package exflag

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strings"
	"testing"
)

// Bounds are inclusive; NaN and the infinities are out of every range.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(c *Check)
		want string // "" for accepted
	}{
		{"int at lo", func(c *Check) { c.Int("n", 1, 1, 5, "games") }, ""},
		{"int at hi", func(c *Check) { c.Int("n", 5, 1, 5, "games") }, ""},
		{"int below", func(c *Check) { c.Int("n", 0, 1, 5, "games") }, "-n 0 is out of range: give 1 to 5 games"},
		{"float at hi", func(c *Check) { c.Float("x", 4, 0, 4, "bits") }, ""},
		{"float NaN", func(c *Check) { c.Float("x", math.NaN(), 0, 4, "bits") }, "-x NaN is out of range: give 0 to 4 bits"},
		{"float -Inf", func(c *Check) { c.Float("x", math.Inf(-1), 0, 4, "bits") }, "-x -Inf is out of range"},
		{"prob 0 and 1", func(c *Check) { c.Prob("p", 0); c.Prob("q", 1) }, ""},
		{"prob above", func(c *Check) { c.Prob("p", 1.0000001) }, "-p 1.0000001 is out of range: give a probability from 0 to 1"},
		{"prob Inf", func(c *Check) { c.Prob("p", math.Inf(1)) }, "-p +Inf is out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Check
			tc.run(&c)
			err := c.Err()
			if tc.want == "" {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || Code(err) != 2 {
				t.Errorf("got %v (exit %d), want %q and exit 2", err, Code(err), tc.want)
			}
		})
	}
}

func TestCode(t *testing.T) {
	for err, want := range map[error]int{
		nil:                            0,
		flag.ErrHelp:                   0,
		Usagef("-n 0 is out of range"): 2,
		fmt.Errorf("-store x: %w", Usagef("refused")): 2,
		errors.New("store unreachable"):               1,
	} {
		if got := Code(err); got != want {
			t.Errorf("Code(%v) = %d, want %d", err, got, want)
		}
	}
}
