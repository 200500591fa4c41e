package rcg

import (
	"math"
	"testing"
)

// rankSumBrute enumerates every split of the pooled values into a sample of len(a) and the rest and returns the
// fraction whose rank sum is at least as far from its mean as a's (less: at most a's; mid-ranks for ties, computed
// by brute force).
func rankSumBrute(a, b []float64, less bool) float64 {
	pool := append(append([]float64(nil), a...), b...)
	N, n := len(pool), len(a)
	rank := make([]float64, N)
	for i, v := range pool {
		var less, eq float64
		for _, w := range pool {
			if w < v {
				less++
			} else if w == v {
				eq++
			}
		}
		rank[i] = less + (eq+1)/2
	}
	mean := float64(n) * float64(N+1) / 2
	var obs float64
	for i := range n {
		obs += rank[i]
	}
	var hit, all float64
	for mask := 0; mask < 1<<N; mask++ {
		cnt, s := 0, 0.0
		for i := range N {
			if mask&(1<<i) != 0 {
				cnt++
				s += rank[i]
			}
		}
		if cnt != n {
			continue
		}
		all++
		if less && s <= obs+1e-9 || !less && math.Abs(s-mean) >= math.Abs(obs-mean)-1e-9 {
			hit++
		}
	}
	return hit / all
}

// TestRankSum checks the exact rank-sum p-value against closed forms (complete separation of 3 vs 3:
// 2/C(6,3) = 0.1; of 5 vs 5: 2/252) and against brute-force enumeration of all splits (with and without ties), to
// 1e-12.
func TestRankSum(t *testing.T) {
	if p := RankSum([]float64{1, 2, 3}, []float64{4, 5, 6}); math.Abs(p-0.1) > 1e-12 {
		t.Errorf("3 vs 3 separated: p = %v, want 0.1", p)
	}
	if p := RankSum([]float64{6, 7, 8, 9, 10}, []float64{1, 2, 3, 4, 5}); math.Abs(p-2.0/252) > 1e-12 {
		t.Errorf("5 vs 5 separated: p = %v, want %v", p, 2.0/252)
	}
	r := newRand(17)
	for trial := range 40 {
		n, m := 2+r.IntN(6), 2+r.IntN(6)
		a, b := make([]float64, n), make([]float64, m)
		for i := range a {
			a[i] = math.Round(4*r.NormFloat64()) / 2 // ties for many draws
			if trial%2 == 0 {
				a[i] = r.NormFloat64() + 0.5
			}
		}
		for i := range b {
			b[i] = math.Round(4*r.NormFloat64()) / 2
			if trial%2 == 0 {
				b[i] = r.NormFloat64()
			}
		}
		if got, want := RankSum(a, b), rankSumBrute(a, b, false); math.Abs(got-want) > 1e-12 {
			t.Errorf("a=%v b=%v: p = %v, brute force %v", a, b, got, want)
		}
	}
	if !math.IsNaN(RankSum(nil, []float64{1})) {
		t.Error("empty sample: want NaN")
	}
}

// TestRankSumLess checks the one-sided rank-sum p-value (a smaller than b) against closed forms — complete
// separation of 3 vs 3: 1/C(6,3) = 0.05, of 5 vs 5: 1/252, and the reverse order: 1; with ties, a = {1, 2} and
// b = {2, 3} have mid-ranks 1, 2.5 | 2.5, 4 and rank sum 3.5, which 2 of the 6 splits reach or undercut; the rank sum
// of 1 vs the budgets {4, 4, 4}: 1/4, and of {1, +Inf} vs {4, 4} (mid-ranks 1, 4 | 2.5, 2.5): all splits but the
// two {2.5, 4}, 4/6 — and against brute-force
// enumeration of all splits (with and without ties, +Inf among the values), to 1e-12.
func TestRankSumLess(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []struct {
		a, b []float64
		want float64
	}{
		{[]float64{1, 2, 3}, []float64{4, 5, 6}, 0.05},
		{[]float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, 1.0 / 252},
		{[]float64{6, 7, 8}, []float64{1, 2, 3}, 1},
		{[]float64{1, 2}, []float64{2, 3}, 1.0 / 3},
		{[]float64{1}, []float64{4, 4, 4}, 0.25},
		{[]float64{1, inf}, []float64{4, 4}, 2.0 / 3},
	} {
		if p := RankSumLess(c.a, c.b); math.Abs(p-c.want) > 1e-12 {
			t.Errorf("a=%v b=%v: p = %v, want %v", c.a, c.b, p, c.want)
		}
	}
	r := newRand(29)
	for trial := range 60 {
		n, m := 1+r.IntN(7), 1+r.IntN(7)
		a, b := make([]float64, n), make([]float64, m)
		draw := func(shift float64) float64 {
			switch trial % 3 {
			case 0:
				return r.NormFloat64() + shift
			case 1:
				return math.Round(4*r.NormFloat64()+shift) / 2 // ties for many draws
			}
			// Censored-looking samples: some values at a common budget, some at +Inf.
			switch r.IntN(3) {
			case 0:
				return 4
			case 1:
				return inf
			}
			return 4 * r.Float64()
		}
		for i := range a {
			a[i] = draw(-0.5)
		}
		for i := range b {
			b[i] = draw(0.5)
		}
		if got, want := RankSumLess(a, b), rankSumBrute(a, b, true); math.Abs(got-want) > 1e-12 {
			t.Errorf("a=%v b=%v: p = %v, brute force %v", a, b, got, want)
		}
	}
	if !math.IsNaN(RankSumLess([]float64{1}, nil)) {
		t.Error("empty sample: want NaN")
	}
}
