package cpu

import (
	"math"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/cpu/internal/vec"
	"github.com/geovb/geovb/tensor"
)

// Fused kernels for the sphere hot operations (backend/sphere.go): one goroutine-parallel sweep over the rows, each
// row read once for its norms and once more, while it is still in cache, for the update. The references make about
// ten passes over the data and allocate temporaries.

func init() {
	backend.SphereFlowOp.Register(backend.Kernel[backend.SphereFlowFunc]{
		Name: "cpu.sphere.flow.fused", Backend: Name, Priority: 10, Fn: sphereFlowFused,
	})
	backend.SphereProjectOp.Register(backend.Kernel[backend.SphereProjectFunc]{
		Name: "cpu.sphere.project.fused", Backend: Name, Priority: 10, Fn: sphereProjectFused,
	})
	backend.SphereNormalizeOp.Register(backend.Kernel[backend.SphereNormalizeFunc]{
		Name: "cpu.sphere.normalize.fused", Backend: Name, Priority: 10, Fn: sphereNormalizeFused,
	})
}

// sphereRows runs f over every row (b, i) of the batch×K×n tensors, split over the workers of b when the work is
// large enough. cost is the flop count of one row.
func sphereRows(be backend.Backend, s tensor.Shape, cost float64, f func(bb, i int)) {
	nrows := s.Batch * s.Rows
	body := func(lo, hi int) {
		for r := lo; r < hi; r++ {
			f(r/s.Rows, r%s.Rows)
		}
	}
	if cb, ok := be.(*Backend); ok {
		cb.parallelWork(nrows, cost, body)
		return
	}
	body(0, nrows)
}

// sphereFlowFused is the geodesic flow of paper 001 eq. (7), row by row: x ← x cos(αh) + v sin(αh)/α,
// v ← −α sin(αh) x + v cos(αh), α = ‖v_row‖; rows with v = 0 are not touched.
func sphereFlowFused(be backend.Backend, x, v *tensor.Tensor, h float64) error {
	if err := backend.CheckSphereFlow(x, v, h); err != nil {
		return err
	}
	if err := checkHost("sphere.flow", []string{"x", "v"}, x, v); err != nil {
		return err
	}
	n := x.Cols()
	if x.Len() == 0 {
		return nil
	}
	sphereRows(be, x.Shape(), 8*float64(n)+40, func(bb, i int) {
		xr, vr := row(x, bb, i), row(v, bb, i)
		ss := vec.Dot(vr, vr)
		if ss == 0 {
			return // bit-identical no-op for ‖v‖ = 0
		}
		alpha := math.Sqrt(ss)
		s, c := math.Sincos(alpha * h)
		hs := s / alpha // = h·sinc(αh), no cancellation for tiny α
		as := alpha * s
		vr = vr[:len(xr)]
		for j, xj := range xr {
			vj := vr[j]
			xr[j] = xj*c + vj*hs
			vr[j] = vj*c - xj*as
		}
	})
	return nil
}

// sphereProjectFused computes dst = w − (x·w)x row by row.
func sphereProjectFused(be backend.Backend, dst, x, w *tensor.Tensor) error {
	if err := backend.CheckSphereProject(dst, x, w); err != nil {
		return err
	}
	if err := checkHost("sphere.project", []string{"dst", "x", "w"}, dst, x, w); err != nil {
		return err
	}
	if x.Len() == 0 {
		return nil
	}
	sphereRows(be, x.Shape(), 4*float64(x.Cols()), func(bb, i int) {
		xr, wr, dr := row(x, bb, i), row(w, bb, i), row(dst, bb, i)
		d := vec.Dot(xr, wr)
		wr, dr = wr[:len(xr)], dr[:len(xr)]
		for j, xj := range xr {
			dr[j] = wr[j] - d*xj
		}
	})
	return nil
}

// sphereNormalizeFused rescales each row of x to unit norm and re-projects the matching row of v (drift control).
func sphereNormalizeFused(be backend.Backend, x, v *tensor.Tensor) error {
	if err := backend.CheckSphereNormalize(x, v); err != nil {
		return err
	}
	if err := checkHost("sphere.normalize", []string{"x", "v"}, x, v); err != nil {
		return err
	}
	if x.Len() == 0 {
		return nil
	}
	sphereRows(be, x.Shape(), 6*float64(x.Cols()), func(bb, i int) {
		xr := row(x, bb, i)
		inv := 1 / math.Sqrt(vec.Dot(xr, xr))
		for j := range xr {
			xr[j] *= inv
		}
		if v == nil {
			return
		}
		vr := row(v, bb, i)
		d := vec.Dot(xr, vr)
		vr = vr[:len(xr)]
		for j, xj := range xr {
			vr[j] -= d * xj
		}
	})
	return nil
}
