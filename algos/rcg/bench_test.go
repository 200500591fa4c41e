package rcg_test

import (
	"fmt"
	"testing"

	"github.com/geovb/geovb/algos/rcg"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/models/mog"
	"github.com/geovb/geovb/models/nfa"
)

// BenchmarkRCGMoG measures RCG iterations (gradient, natural gradient, β, line search with VB-EM inside) on the
// K = 8 mixture; report iterations/s = 1/(ns/op). CPU only: the MoG kernels are host Go (see docs/rcg.md).
func BenchmarkRCGMoG(b *testing.B) {
	for _, N := range []int{1000, 10000, 100000, 1000000} {
		b.Run(fmt.Sprintf("N=%d", N), func(b *testing.B) {
			m, err := mog.New(mog.Synthetic(0.3, N, 0.03, 1), N, 2, 8, mog.DefaultPrior(2), mog.Options{})
			if err != nil {
				b.Fatal(err)
			}
			x0, err := mog.Init(m, 1)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			res, err := rcg.Minimize(mog.NewCollapsed(m), x0, rcg.Settings{RestartEvery: rcg.SqrtN}, run.Control{MaxIter: b.N})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(res.FEvals)/float64(res.Iters), "F-evals/iter")
		})
	}
}

// overheadCase is one model of the test 14 benchmark.
type overheadCase struct {
	name string
	obj  rcg.Objective
	x    []float64
}

func overheadCases(b *testing.B) []overheadCase {
	m, err := mog.New(mog.Synthetic(0.3, 10000, 0.03, 1), 10000, 2, 8, mog.DefaultPrior(2), mog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	xm, err := mog.Init(m, 1)
	if err != nil {
		b.Fatal(err)
	}
	const T = 200
	s, err := nfa.New(nfa.SyntheticNSSM(T, 1), T, 21, nfa.Config{Dynamic: true, D: 5, H: 20, Moments: nfa.GaussHermite})
	if err != nil {
		b.Fatal(err)
	}
	xs, err := s.Init(0)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Update(xs); err != nil {
		b.Fatal(err)
	}
	return []overheadCase{{"MoG-N=1e4", mog.NewCollapsed(m), xm}, {"NSSM-T=200", s, xs}}
}

// BenchmarkOverhead is test 14 as a benchmark (notes §8, "negligible overhead"): what RCG adds to an iteration of
// CG is the natural gradient G⁻¹g (closed form for the mixture, two chain scans and a diagonal scaling for the
// NSSM) and one dot product; everything else (gradient, line-search evaluations) is shared. Sub-benchmarks time
// one gradient evaluation ("grad"), one F evaluation ("value") and the natural gradient plus the extra dot product
// ("natgrad"): the overhead per iteration is natgrad / (grad + k·value) for k line-search evaluations.
func BenchmarkOverhead(b *testing.B) {
	for _, c := range overheadCases(b) {
		g, gt := make([]float64, len(c.x)), make([]float64, len(c.x))
		c.obj.Grad(g, c.x)
		b.Run(c.name+"/grad", func(b *testing.B) {
			for b.Loop() {
				c.obj.Grad(g, c.x)
			}
		})
		b.Run(c.name+"/value", func(b *testing.B) {
			for b.Loop() {
				c.obj.Value(c.x)
			}
		})
		b.Run(c.name+"/natgrad", func(b *testing.B) {
			c.obj.Grad(g, c.x) // NatGrad may reuse what Grad cached at x
			var s float64
			for b.Loop() {
				c.obj.NatGrad(gt, g, c.x)
				for i := range g {
					s += g[i] * gt[i]
				}
			}
			_ = s
		})
	}
}
