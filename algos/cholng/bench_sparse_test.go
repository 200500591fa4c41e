package cholng_test

import (
	"fmt"
	"testing"

	"github.com/geovb/geovb/algos/cholng"
	"github.com/geovb/geovb/models/glmm"
	"github.com/geovb/geovb/rng"
)

// BenchmarkArrowNatural is one Alg 2c natural-gradient iteration (draw, model gradient, natural gradient, norm) on a
// synthetic Epilepsy-like GLMM; ns/op per group should stay flat as n grows (linear cost). BenchmarkArrowEuclidean
// is the masked Euclidean gradient for the natural/Euclidean ratio.
func BenchmarkArrowNatural(b *testing.B)   { benchArrow(b, cholng.Natural) }
func BenchmarkArrowEuclidean(b *testing.B) { benchArrow(b, cholng.Euclidean) }

func benchArrow(b *testing.B, kind cholng.Kind) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("groups=%d", n), func(b *testing.B) {
			m, err := glmm.SyntheticEpilepsy(n, 1)
			if err != nil {
				b.Fatal(err)
			}
			f, err := cholng.NewArrow(m.Groups(), m.GlobalDim(), 10)
			if err != nil {
				b.Fatal(err)
			}
			g := make([]float64, f.NumParams())
			c := rng.Counter{Seed: 1}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.Advance(i * f.Dim()).FillNormal(f.Z())
				if _, _, err := f.Gradient(m, kind, g); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/group")
		})
	}
}
