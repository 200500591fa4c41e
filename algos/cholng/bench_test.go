package cholng

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/geovb/geovb/internal/testbackend"
	"gonum.org/v1/gonum/mat"
)

// BenchmarkIteration measures the cost of one dense natural-gradient iteration (draw, gradient, Snngm-ready norm)
// of 1b and 2b with a cheap isotropic Gaussian target, at d = 50, 200, 1000: the time should grow about 16× from
// 200 to 1000 if the step is O(d²) (25× for d² exactly; 125× would reveal d³ work).
func BenchmarkIteration(b *testing.B) {
	be := testbackend.Open(b)
	for _, d := range []int{50, 200, 1000} {
		r := rand.New(rand.NewPCG(1, uint64(d)))
		p := mat.NewSymDense(d, nil)
		for i := 0; i < d; i++ {
			p.SetSym(i, i, 1)
		}
		tg := &isoGauss{m: randVec(r, d)}
		for _, par := range []Param{Covariance, Precision} {
			f, err := NewDense(be, d, par, nil, randLower(r, d, false), 1)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%v/d=%d", par, d), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if _, _, err := f.Gradient(tg, Natural); err != nil {
						b.Fatal(err)
					}
				}
			})
			f.Close()
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
