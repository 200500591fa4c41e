package mgvb

import (
	"fmt"
	"testing"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/tensor"
)

// BenchmarkMGVB measures MGVB iterations (score-function gradient, S = 100) on the conjugate linear model at
// d = 25, 100, 400 and batches of independent fits; b.N counts iterations of the whole batch. Report
// fits×iterations per second from ns/op and the batch size in the name.
func BenchmarkMGVB(bm *testing.B) {
	be := testbackend.Open(bm)
	for _, c := range []struct{ d, batch int }{{25, 1}, {25, 100}, {100, 1}, {400, 1}} {
		bm.Run(fmt.Sprintf("d=%d/fits=%d", c.d, c.batch), func(bm *testing.B) {
			m := newLin(bm, be, 200, c.d, 1)
			mu0 := tensor.NewHost(c.batch, c.d, 1)
			s0 := tensor.NewHost(c.batch, c.d, c.d)
			for k := 0; k < c.batch; k++ {
				for i := 0; i < c.d; i++ {
					s0.Set(k, i, i, 0.04)
				}
			}
			cfg := DefaultConfig()
			cfg.Patience = 0
			bm.ResetTimer()
			if _, err := Fit(be, m, mu0, s0, cfg, run.Control{MaxIter: bm.N}); err != nil {
				bm.Fatal(err)
			}
			bm.ReportMetric(float64(bm.N*c.batch)/bm.Elapsed().Seconds(), "fit-iters/s")
		})
	}
}
