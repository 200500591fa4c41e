package cuda

import (
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// The Gauss–Hermite tanh moments and their reverse pass (backend/gausshermite.go; kernels/gausshermite.cu) in one
// launch each, one thread per element running the Q nodes: the batched NFA/NSSM's layers make these calls per
// evaluation, and the reference's 5Q and 7Q element-wise launches each cost a hand-over to the device thread.

func init() {
	applies := func(b backend.Backend, _ tensor.Shape) bool { _, ok := b.(*Backend); return ok }
	backend.GHTanhOp.Register(backend.Kernel[backend.GHTanhFunc]{
		Name: "cuda.gh.tanh", Backend: Name, Priority: 10, Applies: applies, Fn: ghTanhCUDA,
	})
	backend.GHTanhBackOp.Register(backend.Kernel[backend.GHTanhBackFunc]{
		Name: "cuda.gh.tanh_back", Backend: Name, Priority: 10, Applies: applies, Fn: ghTanhBackCUDA,
	})
}

func ghTanhCUDA(be backend.Backend, m1, m2, u, y, sd, zw *tensor.Tensor) error {
	b := be.(*Backend)
	if err := b.ownsNamed("gh.tanh", []string{"m1", "m2", "u", "y", "sd", "zw"}, m1, m2, u, y, sd, zw); err != nil {
		return err
	}
	v := [6]hotView{hotViewOf(b, m1), hotViewOf(b, m2), hotViewOf(b, u), hotViewOf(b, y), hotViewOf(b, sd),
		hotViewOf(b, zw)}
	return b.queue("gh.tanh", func() error { return ghRun(b.hot(), "gh_tanh", v) })
}

func ghTanhBackCUDA(be backend.Backend, gy, gsum, u, gk, gm, zw *tensor.Tensor) error {
	b := be.(*Backend)
	if err := b.ownsNamed("gh.tanh_back", []string{"gy", "gsum", "u", "gk", "gm", "zw"}, gy, gsum, u, gk, gm,
		zw); err != nil {
		return err
	}
	v := [6]hotView{hotViewOf(b, gy), hotViewOf(b, gsum), hotViewOf(b, u), hotViewOf(b, gk), hotViewOf(b, gm),
		hotViewOf(b, zw)}
	return b.queue("gh.tanh_back", func() error { return ghRun(b.hot(), "gh_tanh_back", v) })
}

// ghRun launches kernel over the elements of the first operand; v holds the two outputs, u, the two inputs and the
// rule, in the kernel's order.
func ghRun(d hotDev, kernel string, v [6]hotView) error {
	o := v[0]
	n := o.batch * o.rows * o.cols
	args := []any{}
	for _, x := range v[:5] {
		args = append(args, x.p, bstride(x), x.rs)
	}
	args = append(args, v[5].p, v[5].rs, n, o.rows, o.cols, v[5].cols)
	return d.launch("gausshermite", kernel, hotGrid(n, hotThreads), hotBlock(hotThreads), 0, args...)
}

// bstride is a view's batch stride as a kernel argument (0 for a batch of one, which is never indexed past 0).
func bstride(v hotView) int {
	if v.batch == 1 {
		return 0
	}
	return v.bs
}
