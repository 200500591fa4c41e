package rcg_test

import (
	"fmt"
	"testing"

	"github.com/geovb/geovb/algos/rcg"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/models/mog"
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
