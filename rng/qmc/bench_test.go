package qmc

import (
	"testing"

	"github.com/geovb/geovb/rng"
)

// BenchmarkNormal times one MGVB iteration's draws on German credit (d = 25, S = 100) and at d = 361, n = 1024,
// against Philox normals of the same count (the floor: the pseudo-random draws the option replaces).
func BenchmarkNormal(b *testing.B) {
	for _, sz := range []struct {
		name    string
		dims, n int
	}{{"d=25/n=100", 25, 100}, {"d=361/n=1024", 361, 1024}} {
		dst := make([]float64, sz.dims*sz.n)
		b.Run(sz.name+"/rqmc", func(b *testing.B) {
			b.SetBytes(int64(8 * len(dst)))
			for i := 0; i < b.N; i++ {
				if err := Normal(dst, sz.dims, sz.n, rng.Counter{Seed: 1, Offset: uint64(i * sz.dims * WordsPerDim)}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(sz.name+"/philox", func(b *testing.B) {
			b.SetBytes(int64(8 * len(dst)))
			for i := 0; i < b.N; i++ {
				rng.Counter{Seed: 1, Offset: uint64(i * len(dst))}.FillNormal(dst)
			}
		})
	}
}
