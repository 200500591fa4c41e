package backendtest

import (
	"fmt"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

func init() { registerBench("floors", benchFloors) }

// benchFloors measures the two floors every hot-op figure is compared with: the copy bandwidth (bytes read plus
// bytes written per second) and the float64 GEMM rate; and the third floor of small batched work, the cost of one
// call: an Axpby on 8 elements, many in a row and then Sync, so on a GPU the time per call is what issuing a
// launch costs the caller, not a round trip to the device.
func benchFloors(b *testing.B, be backend.Backend) {
	b.Run("call/axpby-8", func(b *testing.B) {
		x := mustAlloc(b, be, tensor.Shape{Batch: 1, Rows: 1, Cols: 8})
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := be.Axpby(x, 0.5, x, 0, nil); err != nil {
				b.Fatal(err)
			}
		}
		if err := be.Sync(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		be.Free(x)
	})
	for _, mb := range []int{8, 256} {
		n := mb << 20 / 8
		b.Run(fmt.Sprintf("copy/%dMB", mb), func(b *testing.B) {
			src := mustAlloc(b, be, tensor.Shape{Batch: 1, Rows: n / 1024, Cols: 1024})
			dst := mustAlloc(b, be, src.Shape())
			if err := be.FillUniform(src, rng.Counter{Seed: 1}); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(2 * 8 * src.Len()))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := be.Copy(dst, src); err != nil {
					b.Fatal(err)
				}
			}
			if err := be.Sync(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			be.Free(src)
			be.Free(dst)
		})
	}
	for _, n := range []int{256, 1024} {
		b.Run(fmt.Sprintf("gemm/%d", n), func(b *testing.B) {
			s := tensor.Shape{Batch: 1, Rows: n, Cols: n}
			x, y, z := mustAlloc(b, be, s), mustAlloc(b, be, s), mustAlloc(b, be, s)
			_ = be.FillUniform(x, rng.Counter{Seed: 2})
			_ = be.FillUniform(y, rng.Counter{Seed: 3})
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := be.Gemm(blas.NoTrans, blas.NoTrans, 1, x, y, 0, z); err != nil {
					b.Fatal(err)
				}
			}
			if err := be.Sync(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			flops := 2 * float64(n) * float64(n) * float64(n)
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			be.Free(x)
			be.Free(y)
			be.Free(z)
		})
	}
}

// secondsPerCall calls f b.N times, waits for the backend's queued work and returns the wall time per call, the
// measure every GB/s and GFLOP/s figure of the suite is divided by.
func secondsPerCall(b *testing.B, be backend.Backend, f func() error) float64 {
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if err := f(); err != nil {
			b.Fatal(err)
		}
	}
	if err := be.Sync(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start).Seconds() / float64(b.N)
}

func mustAlloc(b testing.TB, be backend.Backend, s tensor.Shape) *tensor.Tensor {
	t, err := be.Alloc(s)
	if err != nil {
		b.Fatal(err)
	}
	return t
}
