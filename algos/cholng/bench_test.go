package cholng

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/rng"
)

// BenchmarkIteration measures one dense natural-gradient iteration of 1b and 2b — draw z, θ, gradient, natural
// gradient by the O(d²) scan (backend.CholNGTri), Snngm norm and the Snngm update — with a cheap isotropic
// Gaussian target, at d = 50, 200, 1000, 4000. An O(d²) step keeps ns/d² flat (up to fixed per-call costs at small
// d and the drop from cache to memory bandwidth once the d×d buffers stop fitting in the last-level cache); O(d³)
// work would make it grow like d. For d = 4000 (128 MB per d×d buffer) use a small -benchtime.
func BenchmarkIteration(b *testing.B) {
	be := testbackend.Open(b)
	for _, d := range []int{50, 200, 1000, 4000} {
		r := rand.New(rand.NewPCG(1, uint64(d)))
		tg := &isoGauss{m: randVec(r, d)}
		l0 := randLower(r, d, false)
		for _, par := range []Param{Covariance, Precision} {
			b.Run(fmt.Sprintf("%v/d=%d", par, d), func(b *testing.B) {
				f, err := NewDense(be, d, par, nil, l0, 1)
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				cfg := Config{Param: par}
				if err := cfg.defaults(); err != nil {
					b.Fatal(err)
				}
				o, err := newOptimizer(be, cfg, [][2]*T{{f.Mu, f.GMu}, {f.L, f.GL}}, f.NumParams())
				if err != nil {
					b.Fatal(err)
				}
				defer o.close()
				ctr := rng.Counter{Seed: 1}
				iter := func(c rng.Counter) {
					if err := f.Sample(c); err != nil {
						b.Fatal(err)
					}
					_, n2, err := f.Gradient(tg, Natural)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := o.step(math.Sqrt(n2)); err != nil {
						b.Fatal(err)
					}
				}
				iter(rng.Counter{Seed: 1, Stream: 1}) // warm-up: first touch of the freshly allocated buffers
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					iter(ctr.Advance(i * d))
				}
				if err := be.Sync(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(d*d), "ns/d²")
			})
		}
	}
}

// isoGauss is N(m, I): O(d) log joint, so the benchmark measures the family's cost.
type isoGauss struct{ m []float64 }

func (g *isoGauss) Dim() int { return len(g.m) }
func (g *isoGauss) LogJoint(th, grad []float64) float64 {
	s := 0.0
	for i := range th {
		grad[i] = g.m[i] - th[i]
		s -= 0.5 * grad[i] * grad[i]
	}
	return s
}

func (g *isoGauss) LogDensity(grad, th []float64) (float64, error) { return g.LogJoint(th, grad), nil }
