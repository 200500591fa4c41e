package lrvga

import (
	"fmt"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// BenchmarkLinearStep times one L-RVGA linear-regression step (FA step + Woodbury mean, eqs. (25)–(27)) with n_in = 3,
// and reports next to it the GEMM floor of the same run: the time of the step's ≈ (6 n_in + 1) d p² multiply-adds
// (six O(dp²) products per inner iteration of Algorithm 1, plus M_t for the mean) at the rate measured for the d×p Gram
// GEMM Wᵀ W just before. The paper's laptop: 6 s at d = 1e6, p = 100.
// Run with: go test -tags netlib -run X -bench LinearStep -benchtime 2x ./algos/lrvga/
func BenchmarkLinearStep(bb *testing.B) {
	benchLinearStep(bb, func(b backend.Backend, c Config) (linearStepper, error) { return New(b, c) })
}

// BenchmarkLinear32Step is BenchmarkLinearStep for the float32 state of Linear32 (half the memory), with the same
// GEMM floor (float64: Linear32 computes in float64).
func BenchmarkLinear32Step(bb *testing.B) {
	benchLinearStep(bb, func(_ backend.Backend, c Config) (linearStepper, error) {
		f, err := NewLinear32(c)
		return closer32{f}, err
	})
}

// linearStepper is what the step benchmarks need of a filter.
type linearStepper interface {
	Update(x []float64, y float64) error
	StateBytes() int64
	Close()
}

// closer32 gives Linear32 (whose memory is the Go heap's) the Close of linearStepper.
type closer32 struct{ *Linear32 }

func (closer32) Close() {}

func benchLinearStep(bb *testing.B, open func(backend.Backend, Config) (linearStepper, error)) {
	for _, c := range []struct{ d, p int }{{100000, 10}, {1000000, 10}, {1000000, 100}} {
		bb.Run(fmt.Sprintf("d=%d/p=%d/inner=3", c.d, c.p), func(bb *testing.B) {
			b, err := backend.Open("cpu")
			if err != nil {
				bb.Fatal(err)
			}
			defer b.Close()
			rate := gemmRate(bb, b, c.d, c.p)
			f, err := open(b, Config{D: c.d, P: c.p, Inner: 3, Seed: 1})
			if err != nil {
				bb.Fatal(err)
			}
			defer f.Close()
			x := make([]float64, c.d)
			for i := range x {
				x[i] = float64(i%7-3) / 1000
			}
			if err := f.Update(x, 1); err != nil { // warm-up: scratch buffers, page faults
				bb.Fatal(err)
			}
			bb.ResetTimer()
			for i := 0; i < bb.N; i++ {
				if err := f.Update(x, float64(i%2)); err != nil {
					bb.Fatal(err)
				}
			}
			bb.StopTimer()
			step := bb.Elapsed().Seconds() / float64(bb.N)
			floor := float64(6*3+1) * float64(c.d) * float64(c.p) * float64(c.p) / rate
			bb.ReportMetric(step, "s/step")
			bb.ReportMetric(floor, "gemm-floor-s")
			bb.ReportMetric(step/floor, "x-floor")
			bb.ReportMetric(rate/1e9, "GMAC/s")
			bb.ReportMetric(float64(f.StateBytes())/1e6, "state-MB")
		})
	}
}

// gemmRate measures multiply-adds per second of the Gram GEMM Wᵀ W (d×p).
func gemmRate(bb *testing.B, b backend.Backend, d, p int) float64 {
	w, err := b.Alloc(tensor.Shape{Batch: 1, Rows: d, Cols: p})
	if err != nil {
		bb.Fatal(err)
	}
	defer b.Free(w)
	g, _ := b.Alloc(tensor.Shape{Batch: 1, Rows: p, Cols: p})
	defer b.Free(g)
	_ = b.Fill(w, 0.5)
	best := 0.0
	for r := 0; r < 3; r++ {
		start := time.Now()
		if err := b.Gemm(blas.Trans, blas.NoTrans, 1, w, w, 0, g); err != nil {
			bb.Fatal(err)
		}
		_ = b.Sync()
		best = max(best, float64(d)*float64(p)*float64(p)/time.Since(start).Seconds())
	}
	return best
}
