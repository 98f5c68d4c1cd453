package record

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// A vector's text: ParseVector reads spaces or commas and any decimal form; FormatVector writes
// the shortest form that reads back to the same float32, which ParseVector reads again.
func TestVectorText(t *testing.T) {
	tests := []struct {
		in      string
		want    []float32
		printed string
		err     string // a part of the error; "" for none
	}{
		{in: "1 2 300", want: []float32{1, 2, 300}, printed: "1 2 300"},
		{in: "1,2 , 3e2", want: []float32{1, 2, 300}, printed: "1 2 300"},
		{in: "0.50, -1\t3.5e-05", want: []float32{0.5, -1, 3.5e-05}, printed: "0.5 -1 3.5e-05"},
		{in: "0.1", want: []float32{0.1}, printed: "0.1"},
		{in: "", err: "it is empty"},
		{in: " , ", err: "it is empty"},
		{in: "1 x", err: `component 1, "x", is not a number`},
		{in: strings.Repeat("1 ", MaxVectorDim+1), err: "at most 8192"},
	}
	for _, tc := range tests {
		got, err := ParseVector(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrInvalid) || !errors.Is(err, ErrVector) {
				t.Errorf("ParseVector(%.20q) = %v, %v; want an ErrInvalid and ErrVector saying %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseVector(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			continue
		}
		printed := FormatVector(got)
		if printed != tc.printed {
			t.Errorf("FormatVector(%v) = %q, want %q", got, printed, tc.printed)
		}
		if again, err := ParseVector(printed); err != nil || !slices.Equal(again, got) {
			t.Errorf("%q reads back as %v, %v; want %v", printed, again, err, got)
		}
	}
}
