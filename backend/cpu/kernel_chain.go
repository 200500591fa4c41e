package cpu

import (
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// The chain natural gradient (backend/chain.go) as the two sequential scans per chain, the chains split over the
// workers: O(n) work per chain where the reference's doubling scans do O(n log n) in about 8⌈log₂ n⌉ element-wise
// passes, which a CPU does not need (its parallelism is across chains). A scan is one long chain of dependent
// multiply-adds, so four chains go through each loop side by side, which hides the latency of each.

func init() {
	backend.ChainNatGradOp.Register(backend.Kernel[backend.ChainNatGradFunc]{
		Name: "cpu.chain.natgrad.sequential", Backend: Name, Priority: 10, Fn: chainNatGradSequential,
	})
}

const chainLanes = 4

// chainNatGradSequential runs, for each chain, y_t = g_t + s̆_{t+1}y_{t+1} backward and g̃_t = s̊_t y_t + s̆_t g̃_{t−1}
// forward (paper 004 eq. 20) in scratch rows, then copies them to dst, so that dst may alias any operand.
func chainNatGradSequential(be backend.Backend, dst, g, breve, ring *tensor.Tensor) error {
	if err := checkHost("chain.natgrad", []string{"dst", "g", "breve", "ring"}, dst, g, breve, ring); err != nil {
		return err
	}
	s := g.Shape()
	n, chains := s.Cols, s.Batch*s.Rows
	groups := (chains + chainLanes - 1) / chainLanes
	body := func(lo, hi int) {
		y := make([]float64, chainLanes*n)
		var gs, bs, rs, ys [chainLanes][]float64
		for grp := lo; grp < hi; grp++ {
			first := grp * chainLanes
			k := min(chainLanes, chains-first)
			for l := range chainLanes {
				c := first + min(l, k-1) // the last group fills its spare lanes with its last chain
				bb, i := c/s.Rows, c%s.Rows
				gs[l], bs[l], rs[l], ys[l] = row(g, bb, i), row(breve, bb, i), row(ring, bb, i), y[l*n:(l+1)*n]
			}
			chainScan4(&ys, &gs, &bs, &rs)
			for l := range k {
				copy(row(dst, (first+l)/s.Rows, (first+l)%s.Rows), ys[l])
			}
		}
	}
	if cb, ok := be.(*Backend); ok {
		cb.parallelWork(groups, 20*float64(n), body)
	} else {
		body(0, groups)
	}
	return nil
}

// chainScan4 runs both recurrences of four chains at once into y: backward y_t = g_t + s̆_{t+1}y_{t+1}, then
// forward y_t ← s̊_t y_t + s̆_t y_{t−1}.
func chainScan4(y, g, br, r *[chainLanes][]float64) {
	y0, y1, y2, y3 := y[0], y[1], y[2], y[3]
	g0, g1, g2, g3 := g[0], g[1], g[2], g[3]
	b0, b1, b2, b3 := br[0], br[1], br[2], br[3]
	r0, r1, r2, r3 := r[0], r[1], r[2], r[3]
	n := len(y0)
	_, _, _, _ = y1[n-1], y2[n-1], y3[n-1], g0[n-1]
	_, _, _, _ = g1[n-1], g2[n-1], g3[n-1], b0[n-1]
	_, _, _, _ = b1[n-1], b2[n-1], b3[n-1], r0[n-1]
	_, _, _ = r1[n-1], r2[n-1], r3[n-1]
	a0, a1, a2, a3 := g0[n-1], g1[n-1], g2[n-1], g3[n-1]
	y0[n-1], y1[n-1], y2[n-1], y3[n-1] = a0, a1, a2, a3
	for t := n - 2; t >= 0; t-- {
		a0 = g0[t] + b0[t+1]*a0
		a1 = g1[t] + b1[t+1]*a1
		a2 = g2[t] + b2[t+1]*a2
		a3 = g3[t] + b3[t+1]*a3
		y0[t], y1[t], y2[t], y3[t] = a0, a1, a2, a3
	}
	a0, a1, a2, a3 = r0[0]*a0, r1[0]*a1, r2[0]*a2, r3[0]*a3
	y0[0], y1[0], y2[0], y3[0] = a0, a1, a2, a3
	for t := 1; t < n; t++ {
		a0 = r0[t]*y0[t] + b0[t]*a0
		a1 = r1[t]*y1[t] + b1[t]*a1
		a2 = r2[t]*y2[t] + b2[t]*a2
		a3 = r3[t]*y3[t] + b3[t]*a3
		y0[t], y1[t], y2[t], y3[t] = a0, a1, a2, a3
	}
}
