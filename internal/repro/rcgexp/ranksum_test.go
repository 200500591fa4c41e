package rcgexp

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/geovb/geovb/rng"
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

// gehanBrute enumerates every split of the pooled observations into a sample of len(a) and the rest and returns the
// fraction whose Gehan statistic — over the pairs across the split, +1 when the sample's observation is known to
// come first, −1 when the other's is — is at least a's; the pair rule written out on its own, without scores.
func gehanBrute(a, b []TimeObs) float64 {
	pool := append(append([]TimeObs(nil), a...), b...)
	N, n := len(pool), len(a)
	known := func(x, y TimeObs) bool { // x's time known to come before y's
		return x.Reached && (x.T < y.T || (!y.Reached && x.T == y.T))
	}
	stat := func(mask int) int {
		u := 0
		for i := range N {
			for j := range N {
				if mask&(1<<i) == 0 || mask&(1<<j) != 0 {
					continue
				}
				if known(pool[i], pool[j]) {
					u++
				}
				if known(pool[j], pool[i]) {
					u--
				}
			}
		}
		return u
	}
	obs := stat(1<<n - 1)
	var hit, all float64
	for mask := 0; mask < 1<<N; mask++ {
		if bitsSet(mask) != n {
			continue
		}
		all++
		if stat(mask) >= obs {
			hit++
		}
	}
	return hit / all
}

func bitsSet(x int) int {
	c := 0
	for ; x != 0; x &= x - 1 {
		c++
	}
	return c
}

// TestGehanLess checks Gehan's test against brute-force enumeration of the pair statistic (random samples of up to
// 6 + 6 with reached times and bounds drawn from few values, so that ties and bounds at reached times occur), against
// RankSumLess without bounds, and, when every bound lies above every reached time, against RankSumLess with the
// bounds at one common value; all to 1e-12. One case by hand: a reached at 1 and 2, b bounded at 5 twice (two runs
// out of budget) and reached at 3: a's two observations precede all of b's, which only 1 of the C(5, 2) = 10 splits
// matches — p = 0.1; with b's reach at 1.5 instead, the split {1, 1.5} ties it: p = 0.2.
func TestGehanLess(t *testing.T) {
	hand := []struct {
		b    []TimeObs
		want float64
	}{
		{[]TimeObs{{5, false}, {5, false}, {3, true}}, 0.1},
		{[]TimeObs{{5, false}, {5, false}, {1.5, true}}, 0.2},
	}
	for _, c := range hand {
		if got := GehanLess([]TimeObs{{1, true}, {2, true}}, c.b); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("b %v: p %v, want %v", c.b, got, c.want)
		}
	}
	rnd := rand.New(rand.NewPCG(7, 8))
	draw := func(k int, bounds bool) []TimeObs {
		out := make([]TimeObs, k)
		for i := range out {
			out[i] = TimeObs{T: float64(1 + rnd.IntN(5)), Reached: !bounds || rnd.IntN(3) > 0}
		}
		return out
	}
	times := func(os []TimeObs, bound float64) []float64 {
		out := make([]float64, len(os))
		for i, o := range os {
			out[i] = o.T
			if !o.Reached {
				out[i] = bound
			}
		}
		return out
	}
	for trial := range 300 {
		n, m := 1+rnd.IntN(6), 1+rnd.IntN(6)
		a, b := draw(n, trial%3 != 0), draw(m, trial%3 != 0)
		got := GehanLess(a, b)
		if want := gehanBrute(a, b); math.Abs(got-want) > 1e-12 {
			t.Fatalf("a %v, b %v: p %v, brute force %v", a, b, got, want)
		}
		if trial%3 == 0 {
			if want := RankSumLess(times(a, 0), times(b, 0)); math.Abs(got-want) > 1e-12 {
				t.Fatalf("no bounds: a %v, b %v: p %v, rank sum %v", a, b, got, want)
			}
		}
		// Bounds moved above every reached time: they tie as at one common value.
		for _, s := range [][]TimeObs{a, b} {
			for i := range s {
				if !s[i].Reached {
					s[i].T = 6 + float64(rnd.IntN(3))
				}
			}
		}
		if got, want := GehanLess(a, b), RankSumLess(times(a, 9), times(b, 9)); math.Abs(got-want) > 1e-12 {
			t.Fatalf("bounds above the reached times: a %v, b %v: p %v, rank sum %v", a, b, got, want)
		}
	}
	if !math.IsNaN(GehanLess(nil, []TimeObs{{1, true}})) {
		t.Error("empty sample: want NaN")
	}
}

func newRand(seed uint64) *rand.Rand { return rand.New(rng.NewSource(seed, 4)) }
