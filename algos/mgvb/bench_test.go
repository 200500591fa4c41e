package mgvb

import (
	"fmt"
	"testing"
	"time"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/tensor"
)

// benchFit runs b.N MGVB iterations (score-function gradient, natural gradient, S = 100, no early stop) of `fits`
// independent fits batched in one Fit call, from μ₀ = 0, Σ₀ = 0.04 I. ns/op includes the setup and iteration 0;
// the metrics come from the iterations alone (the sum of run.Record.IterTime): fit-iters/s counts one iteration of
// one fit, iters/s one iteration of the whole batch.
func benchFit(bm *testing.B, be backend.Backend, m model.Batched, fits int) {
	d := m.Dim()
	mu0 := tensor.NewHost(fits, d, 1)
	s0 := tensor.NewHost(fits, d, d)
	for k := 0; k < fits; k++ {
		for i := 0; i < d; i++ {
			s0.Set(k, i, i, 0.04)
		}
	}
	cfg := DefaultConfig()
	cfg.Patience, cfg.Seed = 0, 1
	var loop time.Duration
	rec := run.Func(func(r run.Record) { loop += r.IterTime })
	bm.ResetTimer()
	if _, err := fitBatch(be, m, mu0, s0, cfg, run.Control{MaxIter: bm.N, Recorder: rec}); err != nil {
		bm.Fatal(err)
	}
	bm.StopTimer()
	bm.ReportMetric(float64(bm.N)/loop.Seconds(), "iters/s")
	bm.ReportMetric(float64(bm.N*fits)/loop.Seconds(), "fit-iters/s")
}

// BenchmarkMGVB is the throughput of MGVB at d = 25, 100, 400 and 1000 with S = 100 on the conjugate linear model
// (n = 200; its log posterior costs two d×d×S GEMMs, so the O(d³) manifold algebra and the O(d²S) gradient
// statistics dominate).
func BenchmarkMGVB(bm *testing.B) {
	be := testbackend.Open(bm)
	for _, d := range []int{25, 100, 400, 1000} {
		bm.Run(fmt.Sprintf("d=%d", d), func(bm *testing.B) {
			benchFit(bm, be, newLin(bm, be, 200, d, 1), 1)
		})
	}
}

// BenchmarkMGVBGerman is the throughput of batched German-credit fits (d = 25, n = 1000, S = 100): one fit, and
// 1000 independent fits (each with its own draws) advancing in one batched computation.
func BenchmarkMGVBGerman(bm *testing.B) {
	be := testbackend.Open(bm)
	m := germanModel(bm, be, true)
	for _, fits := range []int{1, 1000} {
		bm.Run(fmt.Sprintf("fits=%d", fits), func(bm *testing.B) { benchFit(bm, be, m, fits) })
	}
}
