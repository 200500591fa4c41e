package cholng

import (
	"fmt"
	"math"
	"testing"

	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/models/glmm"
	"github.com/geovb/geovb/rng"
)

// BenchmarkArrowNatural is one full Alg 2c iteration with Snngm — draw z, θ, the model's log joint and gradient on
// the host, natural gradient, Riemannian norm and the Snngm update on the backend — on a synthetic Epilepsy-like
// GLMM (4 visits per group, p = 6, r = 2, d_G = 9) with n = 1e3 … 1e6 groups. The cost is linear in n when ns/group
// stays flat. BenchmarkArrowEuclidean is the Euclidean gradient with Adam, for the natural/Euclidean ratio. ns/group includes the model (O(n_obs)).
func BenchmarkArrowNatural(b *testing.B)   { benchArrow(b, Natural, Snngm) }
func BenchmarkArrowEuclidean(b *testing.B) { benchArrow(b, Euclidean, Adam) }

func benchArrow(b *testing.B, kind Kind, opt Optimizer) {
	be := testbackend.Open(b)
	for _, n := range []int{1000, 10000, 100000, 1000000} {
		b.Run(fmt.Sprintf("groups=%d", n), func(b *testing.B) {
			m, err := glmm.SyntheticEpilepsy(n, 1)
			if err != nil {
				b.Fatal(err)
			}
			f, err := NewArrow(be, m.Groups(), m.GlobalDim(), 10)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			benchSparse(b, f, m, kind, opt)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/group")
		})
	}
}

// benchSparse times b.N iterations of FitSparse's loop body (draw, gradient, optimiser step) on f, after one
// untimed iteration.
func benchSparse(b *testing.B, f Sparse, m model.Density, kind Kind, opt Optimizer) {
	cfg := Config{Optimizer: opt, Kind: kind}
	if err := cfg.defaults(); err != nil {
		b.Fatal(err)
	}
	c := f.core()
	o, err := newOptimizer(c.b, cfg, [][2]*T{{c.pw, c.gw}}, c.np)
	if err != nil {
		b.Fatal(err)
	}
	defer o.close()
	ctr := rng.Counter{Seed: 1}
	iter := func(c rng.Counter) {
		if err := f.Sample(c); err != nil {
			b.Fatal(err)
		}
		_, n2, err := f.Gradient(m, kind)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := o.step(math.Sqrt(n2)); err != nil {
			b.Fatal(err)
		}
	}
	iter(rng.Counter{Seed: 1, Stream: 1}) // warm-up: the first touch of freshly allocated buffers (page faults) is not part of an iteration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		iter(ctr.Advance(i * f.Dim()))
	}
	if err := c.b.Sync(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkArrowHostCopies is the part of an Alg 2c iteration that moves θ to the host and ∇log p back (the model
// runs on the host): one Download of θ and one Upload of ∇log p (d = 3e5 + 9 at 1e5 Epilepsy-like groups), to be
// read against BenchmarkArrowNatural/groups=100000, the whole iteration.
func BenchmarkArrowHostCopies(b *testing.B) {
	be := testbackend.Open(b)
	m, err := glmm.SyntheticEpilepsy(100000, 1)
	if err != nil {
		b.Fatal(err)
	}
	f, err := NewArrow(be, m.Groups(), m.GlobalDim(), 10)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	c := f.core()
	b.SetBytes(int64(2 * 8 * c.d))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.b.Download(c.hthT, c.th); err != nil {
			b.Fatal(err)
		}
		if err := c.b.Upload(c.gp, c.hgpT); err != nil {
			b.Fatal(err)
		}
	}
}
