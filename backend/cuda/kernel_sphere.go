package cuda

import (
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// Fused kernels for the sphere hot operations (backend/sphere.go, paper 001 eq. (7); kernels/sphere.cu): one pass
// over the rows, each row read once for its norms and, from registers, updated and written once, in place of the
// reference's dozen passes and temporaries. Which of the three variants runs depends on the row length n only:
// one thread per row for short rows (1e7 points on S²), one warp per row up to 512, one block per row beyond
// (1e4 points on S^4999).

// Row lengths up to which the thread and warp variants are used (the whole row then sits in registers).
const (
	sphThreadMaxN = 8
	sphWarpMaxN   = 512
)

func init() {
	applies := func(b backend.Backend, _ tensor.Shape) bool { _, ok := b.(*Backend); return ok }
	backend.SphereFlowOp.Register(backend.Kernel[backend.SphereFlowFunc]{
		Name: "cuda.sphere.flow", Backend: Name, Priority: 10, Applies: applies, Fn: sphereFlowCUDA,
	})
	backend.SphereProjectOp.Register(backend.Kernel[backend.SphereProjectFunc]{
		Name: "cuda.sphere.project", Backend: Name, Priority: 10, Applies: applies, Fn: sphereProjectCUDA,
	})
	backend.SphereNormalizeOp.Register(backend.Kernel[backend.SphereNormalizeFunc]{
		Name: "cuda.sphere.normalize", Backend: Name, Priority: 10, Applies: applies, Fn: sphereNormalizeCUDA,
	})
}

// sphVariant returns the kernel suffix for rows of n elements ("thread", "warp" or "block"), unless variant names
// one already (tests run every variant on every row length), and the number of rows one 256-thread block takes.
func sphVariant(n int, variant string) (string, int) {
	if variant == "" {
		switch {
		case n <= sphThreadMaxN:
			variant = "thread"
		case n <= sphWarpMaxN:
			variant = "warp"
		default:
			variant = "block"
		}
	}
	switch variant {
	case "thread":
		return variant, hotThreads
	case "warp":
		return variant, hotThreads / 32
	}
	return "block", 1
}

// sphereFlowCUDA advances (x, v) along the geodesic flow for time h (see backend.SphereFlow).
func sphereFlowCUDA(be backend.Backend, x, v *tensor.Tensor, h float64) error {
	const op = "sphere.flow"
	if err := backend.CheckSphereFlow(x, v, h); err != nil {
		return err
	}
	b := be.(*Backend)
	if err := b.ownsNamed(op, []string{"x", "v"}, x, v); err != nil {
		return err
	}
	if x.Len() == 0 {
		return nil
	}
	xv, vv := hotViewOf(b, x), hotViewOf(b, v)
	return b.queue(op, func() error { return sphFlowRun(b.hot(), xv, vv, h, "") })
}

// sphereProjectCUDA computes dst = w − (x·w)x row by row (see backend.SphereProject).
func sphereProjectCUDA(be backend.Backend, dst, x, w *tensor.Tensor) error {
	const op = "sphere.project"
	if err := backend.CheckSphereProject(dst, x, w); err != nil {
		return err
	}
	b := be.(*Backend)
	if err := b.ownsNamed(op, []string{"dst", "x", "w"}, dst, x, w); err != nil {
		return err
	}
	if x.Len() == 0 {
		return nil
	}
	dv, xv, wv := hotViewOf(b, dst), hotViewOf(b, x), hotViewOf(b, w)
	return b.queue(op, func() error { return sphProjectRun(b.hot(), dv, xv, wv, "") })
}

// sphereNormalizeCUDA rescales the rows of x to unit norm and re-projects v (see backend.SphereNormalize).
func sphereNormalizeCUDA(be backend.Backend, x, v *tensor.Tensor) error {
	const op = "sphere.normalize"
	if err := backend.CheckSphereNormalize(x, v); err != nil {
		return err
	}
	b := be.(*Backend)
	if err := b.ownsNamed(op, []string{"x", "v"}, x, v); err != nil {
		return err
	}
	if x.Len() == 0 {
		return nil
	}
	xv, vv := hotViewOf(b, x), hotViewOf(b, v)
	return b.queue(op, func() error { return sphNormalizeRun(b.hot(), xv, vv, "") })
}

func sphFlowRun(d hotDev, x, v hotView, h float64, variant string) error {
	nrows := x.batch * x.rows
	suf, per := sphVariant(x.cols, variant)
	return d.launch("sphere", "sphere_flow_"+suf, hotGrid(nrows, per), hotBlock(hotThreads), 0,
		x.p, x.bs, x.rs, v.p, v.bs, v.rs, nrows, x.rows, x.cols, h)
}

func sphProjectRun(d hotDev, dst, x, w hotView, variant string) error {
	nrows := x.batch * x.rows
	suf, per := sphVariant(x.cols, variant)
	return d.launch("sphere", "sphere_project_"+suf, hotGrid(nrows, per), hotBlock(hotThreads), 0,
		dst.p, dst.bs, dst.rs, x.p, x.bs, x.rs, w.p, w.bs, w.rs, nrows, x.rows, x.cols)
}

// sphNormalizeRun renormalises x and, when v.p is not 0, re-projects v.
func sphNormalizeRun(d hotDev, x, v hotView, variant string) error {
	nrows := x.batch * x.rows
	suf, per := sphVariant(x.cols, variant)
	return d.launch("sphere", "sphere_normalize_"+suf, hotGrid(nrows, per), hotBlock(hotThreads), 0,
		x.p, x.bs, x.rs, v.p, v.bs, v.rs, nrows, x.rows, x.cols)
}
