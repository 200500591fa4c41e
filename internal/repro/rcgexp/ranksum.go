package rcgexp

import (
	"math"
	"sort"
)

// RankSum returns the two-sided p-value of the Wilcoxon rank-sum (Mann–Whitney) test of samples a and b: the
// probability, over all C(n+m, n) equally likely assignments of the pooled values to a sample of size n = len(a),
// that the rank sum of a is at least as far from its mean n(n+m+1)/2 as observed. Ties get mid-ranks and the
// permutation distribution is computed exactly for those mid-ranks (no normal approximation), so it is exact for
// the small samples of the experiments (the paper uses rank-sum tests for Fig. 7 and the NSSM times). NaN when a or b is empty.
func RankSum(a, b []float64) float64 {
	d, ok := rankSumDist(a, b)
	if !ok {
		return math.NaN()
	}
	// Mean of the doubled rank sum: n·total/N; compare |s − mean| ≥ |obs − mean| in exact integer arithmetic
	// (multiplied by N).
	dev := func(s int) int {
		v := d.N*s - d.n*d.total
		if v < 0 {
			return -v
		}
		return v
	}
	return d.p(func(s int) bool { return dev(s) >= dev(d.obs) })
}

// RankSumLess returns the one-sided p-value of the Wilcoxon rank-sum test for the alternative that a's values
// tend to be smaller than b's: the probability, over all C(n+m, n) equally likely assignments of the pooled values
// to a sample of size n = len(a), that the rank sum of a is at most the observed one. Mid-ranks for ties and the
// exact permutation distribution for them, as in RankSum. NaN when a or b is empty.
func RankSumLess(a, b []float64) float64 {
	d, ok := rankSumDist(a, b)
	if !ok {
		return math.NaN()
	}
	return d.p(func(s int) bool { return s <= d.obs })
}

// rankDist is the exact permutation distribution of a's doubled mid-rank sum.
type rankDist struct {
	n, N       int       // len(a) and len(a) + len(b)
	obs, total int       // a's doubled rank sum and that of all N values
	ways       []float64 // ways[s]: assignments of n of the N values to a with doubled rank sum s
}

// p returns the fraction of the assignments whose doubled rank sum s satisfies in.
func (d *rankDist) p(in func(s int) bool) float64 {
	var hit, all float64
	for s, w := range d.ways {
		if w == 0 {
			continue
		}
		all += w
		if in(s) {
			hit += w
		}
	}
	return hit / all
}

func rankSumDist(a, b []float64) (*rankDist, bool) {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return nil, false
	}
	N := n + m
	type item struct {
		v   float64
		inA bool
	}
	pool := make([]item, 0, N)
	for _, v := range a {
		pool = append(pool, item{v, true})
	}
	for _, v := range b {
		pool = append(pool, item{v, false})
	}
	sort.Slice(pool, func(i, j int) bool { return pool[i].v < pool[j].v })
	// Doubled mid-ranks are integers: for a tie block at 0-based positions i..j−1 the mid-rank is (i+1+j)/2.
	r2 := make([]int, N)
	for i := 0; i < N; {
		j := i + 1
		for j < N && pool[j].v == pool[i].v {
			j++
		}
		for k := i; k < j; k++ {
			r2[k] = i + 1 + j
		}
		i = j
	}
	obs, total := 0, 0
	for k, it := range pool {
		total += r2[k]
		if it.inA {
			obs += r2[k]
		}
	}
	return &rankDist{n: n, N: N, obs: obs, total: total, ways: sumWays(r2, n, total)}, true
}

// sumWays returns ways[s]: the number of ways to choose n of the non-negative integer scores with sum s, for s up to
// total (the sum of all scores).
func sumWays(scores []int, n, total int) []float64 {
	ways := make([][]float64, n+1) // ways[k][s]: k of the scores seen so far with sum s
	for k := range ways {
		ways[k] = make([]float64, total+1)
	}
	ways[0][0] = 1
	for _, r := range scores {
		for k := n; k >= 1; k-- {
			for s := total; s >= r; s-- {
				ways[k][s] += ways[k-1][s-r]
			}
		}
	}
	return ways[n]
}

// TimeObs is a time-to-target observation: the time when Reached, else a lower bound on it (the run stopped, or
// its budget ran out, before it reached the target).
type TimeObs struct {
	T       float64
	Reached bool
}

// before reports whether o's true time is known to come before p's: o reached the target at a time that p's
// time — reached later, or a bound at or past it — cannot undercut.
func (o TimeObs) before(p TimeObs) bool {
	return o.Reached && (o.T < p.T || !p.Reached && o.T <= p.T)
}

// GehanLess returns the one-sided p-value of Gehan's generalised Wilcoxon test for the alternative that a's times
// tend to be smaller than b's, for times some of which are only lower bounds: each pair of observations scores +1
// or −1 when the data fix which came first and 0 when they do not (two bounds, or a bound below a reached time).
// a's statistic is the sum of its observations' Mantel scores (how many of the pooled observations each is known
// to precede, less how many are known to precede it), and p is the fraction of the C(n+m, n) equally likely
// assignments of the pooled observations to a sample of n = len(a) whose statistic is at least a's, computed
// exactly. Without bounds it is RankSumLess; when every bound lies above every reached time, the bounds tie as
// they do there at a common value. Unlike RankSumLess on bounds, it needs no common bound: runs with different
// budgets (the parts of a split sweep) compare only where their order is known. NaN when a or b is empty.
func GehanLess(a, b []TimeObs) float64 {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return math.NaN()
	}
	pool := append(append(make([]TimeObs, 0, n+m), a...), b...)
	N := n + m
	// Shifted scores score + N − 1 ≥ 0, so that the sums index the distribution.
	scores := make([]int, N)
	obs, total := 0, 0
	for i, o := range pool {
		sc := N - 1
		for _, q := range pool {
			if o.before(q) {
				sc++
			} else if q.before(o) {
				sc--
			}
		}
		scores[i] = sc
		total += sc
		if i < n {
			obs += sc
		}
	}
	d := rankDist{ways: sumWays(scores, n, total)}
	return d.p(func(s int) bool { return s >= obs })
}
