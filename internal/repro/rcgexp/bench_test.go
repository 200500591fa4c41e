package rcgexp_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/geovb/geovb/algos/rcg"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/internal/repro/rcgexp"
	"github.com/geovb/geovb/internal/testbackend"
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
			res, err := rcg.Minimize(context.Background(), mog.NewCollapsed(m), x0,
				rcg.Settings{RestartEvery: rcg.SqrtN, Control: run.Control{MaxIter: b.N}})
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

// BenchmarkOverhead is test 14 as a benchmark (the paper's "negligible overhead"): what RCG adds to an iteration of
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

// BenchmarkMoGBatch30 runs 30 initialisations of one mixture (R = 0.3, K = 8, ε = 1e-8·N: the Fig. 8 settings) to
// convergence twice per op, by RCG (⌈√n⌉ restarts) and by VB-EM — as a loop of host runs (rcgexp.RunMoG) and as one
// batch on the test backend (rcgexp.RunMoGBatch; GEOVB_BACKEND, else cpu) — and reports the wall-time ratio
// loop/batched measured in the same op.
func BenchmarkMoGBatch30(b *testing.B) {
	be := testbackend.Open(b)
	for _, meth := range []string{"RCG", "VBEM"} {
		for _, N := range []int{1000, 4000} {
			b.Run(fmt.Sprintf("%s/N=%d", meth, N), func(b *testing.B) {
				m, err := mog.New(mog.Synthetic(0.3, N, 0.03, 2024), N, 2, 8, mog.DefaultPrior(2), mog.Options{})
				if err != nil {
					b.Fatal(err)
				}
				const B = 30
				ms, xs := make([]*mog.Model, B), make([][]float64, B)
				for i := range B {
					ms[i] = m
					if xs[i], err = mog.Init(m, uint64(i)); err != nil {
						b.Fatal(err)
					}
				}
				tol := 1e-8 * float64(N)
				var loop, batched time.Duration
				iters := 0
				for b.Loop() {
					t0 := time.Now()
					for i := range B {
						tr, err := rcgexp.RunMoG(m, xs[i], meth, tol, 0)
						if err != nil {
							b.Fatal(err)
						}
						iters += tr.Iters
					}
					t1 := time.Now()
					bt, err := mog.NewBatch(be, ms)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := rcgexp.RunMoGBatch(context.Background(), bt, xs, meth, tol, 0, nil); err != nil {
						b.Fatal(err)
					}
					bt.Close()
					loop, batched = loop+t1.Sub(t0), batched+time.Since(t1)
				}
				b.ReportMetric(loop.Seconds()/float64(b.N), "loop-s/op")
				b.ReportMetric(batched.Seconds()/float64(b.N), "batched-s/op")
				b.ReportMetric(loop.Seconds()/batched.Seconds(), "loop/batched")
				b.ReportMetric(float64(iters)/float64(b.N*B), "iters/run")
			})
		}
	}
}

// BenchmarkNFABatch8 runs 8 initialisations of NFA and of the NSSM on one synthetic data set each (p = 21, d = 5,
// H = 20, Gauss–Hermite: the §6.6–6.7 sweeps' models) for 30 iterations of RCG each — as a loop of host runs (Minimize on each Model, its time
// steps in blocks over the cores) and as one batch on the test backend (MinimizeBatch on nfa.Batch; GEOVB_BACKEND,
// else cpu) — and reports the wall-time ratio loop/batched measured in the same op, and the batch's evaluations of
// one run's F (nfa.Batch.RunEvaluations). Both do the same iterations
// (TestMinimizeBatchNFA; NSSM paths may part after a few iterations, with the same work per iteration).
func BenchmarkNFABatch8(b *testing.B) {
	be := testbackend.Open(b)
	for _, c := range []struct {
		dyn bool
		T   int
	}{{false, 300}, {false, 1000}, {true, 300}, {true, 1000}} {
		name := "NFA"
		if c.dyn {
			name = "NSSM"
		}
		T := c.T
		b.Run(fmt.Sprintf("%s/T=%d", name, T), func(b *testing.B) {
			const B, iters = 8, 30
			X := nfa.SyntheticNFA(T, 1)
			if c.dyn {
				X = nfa.SyntheticNSSM(T, 1)
			}
			cfg := nfa.Config{Dynamic: c.dyn, D: 5, H: 20, Moments: nfa.GaussHermite}
			s := rcg.Settings{Tol: 1e-5 * float64(T) / 80, Patience: 5, PowellBeale: 0.2,
				Control: run.Control{MaxIter: iters}}
			runs := func() ([]*nfa.Model, [][]float64) {
				ms, xs := make([]*nfa.Model, B), make([][]float64, B)
				for i := range B {
					m, err := nfa.New(X, T, 21, cfg)
					if err != nil {
						b.Fatal(err)
					}
					if xs[i], err = m.Init(uint64(i + 1)); err != nil {
						b.Fatal(err)
					}
					ms[i] = m
				}
				return ms, xs
			}
			var loop, batched time.Duration
			evals := 0
			for b.Loop() {
				ms, xs := runs()
				t0 := time.Now()
				for i, m := range ms {
					if _, err := rcg.Minimize(context.Background(), m, xs[i], s); err != nil {
						b.Fatal(err)
					}
				}
				t1 := time.Now()
				ms, xs = runs()
				t2 := time.Now()
				bt, err := nfa.NewBatch(be, ms)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := rcg.MinimizeBatch(context.Background(), bt, xs, s); err != nil {
					b.Fatal(err)
				}
				evals += bt.RunEvaluations()
				bt.Close()
				loop, batched = loop+t1.Sub(t0), batched+time.Since(t2)
			}
			b.ReportMetric(loop.Seconds()/float64(b.N), "loop-s/op")
			b.ReportMetric(batched.Seconds()/float64(b.N), "batched-s/op")
			b.ReportMetric(loop.Seconds()/batched.Seconds(), "loop/batched")
			b.ReportMetric(float64(evals)/float64(b.N), "batch-run-evals/op")
		})
	}
}
