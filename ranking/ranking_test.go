package ranking

import (
	"math"
	"testing"
)

func TestIDF(t *testing.T) {
	c := Corpus{Docs: 10, Terms: 100}
	for _, x := range []struct {
		df   int64
		want float64
	}{
		{0, math.Log(1 + 10.5/0.5)},
		{1, math.Log(1 + 9.5/1.5)},
		{5, math.Log(2)},
		{10, math.Log(1 + 0.5/10.5)},
	} {
		if got := Default.IDF(c, x.df); math.Abs(got-x.want) > 1e-12 {
			t.Errorf("IDF(df %d) = %v, want %v", x.df, got, x.want)
		}
	}
	// Rarer terms weigh more, and no term weighs less than nothing.
	prev := math.Inf(1)
	for df := int64(0); df <= 10; df++ {
		w := Default.IDF(c, df)
		if w >= prev || w <= 0 {
			t.Errorf("IDF(df %d) = %v after %v: not decreasing and positive", df, w, prev)
		}
		prev = w
	}
}

func TestTerm(t *testing.T) {
	c := Corpus{Docs: 4, Terms: 40} // mean length 10
	idf := 2.0
	for _, x := range []struct {
		name    string
		p       BM25
		tf, len int
		want    float64
	}{
		{"absent", Default, 0, 10, 0},
		{"once, mean length", Default, 1, 10, 2 * 1 * 2.2 / (1 + 1.2)},
		{"twice, mean length", Default, 2, 10, 2 * 2 * 2.2 / (2 + 1.2)},
		{"once, twice the mean", Default, 1, 20, 2 * 1 * 2.2 / (1 + 1.2*(0.5+0.5*2))},
		{"once, twice the mean, B 0.75", BM25{K1: 1.2, B: 0.75}, 1, 20, 2 * 1 * 2.2 / (1 + 1.2*(0.25+0.75*2))},
		{"B 0 ignores length", BM25{K1: 1.2, B: 0}, 1, 1000, 2 * 1 * 2.2 / (1 + 1.2)},
		{"K1 0 counts a term once", BM25{K1: 0, B: 0.75}, 5, 10, 2},
	} {
		if got := x.p.Term(idf, x.tf, x.len, c); math.Abs(got-x.want) > 1e-12 {
			t.Errorf("%s: Term = %v, want %v", x.name, got, x.want)
		}
	}
	// More repetitions score more, with diminishing returns; longer claims score less.
	if a, b, d := Default.Term(idf, 1, 10, c), Default.Term(idf, 2, 10, c), Default.Term(idf, 3, 10, c); !(a < b && b < d && b-a > d-b) {
		t.Errorf("tf 1, 2, 3 score %v, %v, %v: not increasing with diminishing returns", a, b, d)
	}
	if short, long := Default.Term(idf, 1, 5, c), Default.Term(idf, 1, 50, c); short <= long {
		t.Errorf("a short claim scores %v, a long one %v", short, long)
	}
}

func TestAvgLenOfEmptyCorpus(t *testing.T) {
	if got := (Corpus{}).AvgLen(); got != 1 {
		t.Errorf("AvgLen of an empty corpus = %v, want 1", got)
	}
}
