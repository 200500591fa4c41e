package cpu

import (
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// The chain natural gradient (backend/chain.go) as the two sequential scans per chain, the chains split over the
// workers: O(n) work per chain where the reference's doubling scans do O(n log n) in about 8⌈log₂ n⌉ element-wise
// passes, which a CPU does not need (its parallelism is across chains).

func init() {
	backend.ChainNatGradOp.Register(backend.Kernel[backend.ChainNatGradFunc]{
		Name: "cpu.chain.natgrad.sequential", Backend: Name, Priority: 10, Fn: chainNatGradSequential,
	})
}

// chainNatGradSequential runs, for each chain, y_t = g_t + s̆_{t+1}y_{t+1} backward and g̃_t = s̊_t y_t + s̆_t g̃_{t−1}
// forward (paper 004 eq. 20) in a scratch row, then copies it to dst, so that dst may alias any operand.
func chainNatGradSequential(be backend.Backend, dst, g, breve, ring *tensor.Tensor) error {
	if err := checkHost("chain.natgrad", []string{"dst", "g", "breve", "ring"}, dst, g, breve, ring); err != nil {
		return err
	}
	n := g.Cols()
	sphereRows(be, g.Shape(), 4*float64(n), func(bb, i int) {
		gr, br, rr := row(g, bb, i), row(breve, bb, i), row(ring, bb, i)
		y := make([]float64, n)
		y[n-1] = gr[n-1]
		for t := n - 2; t >= 0; t-- {
			y[t] = gr[t] + br[t+1]*y[t+1]
		}
		y[0] *= rr[0]
		for t := 1; t < n; t++ {
			y[t] = rr[t]*y[t] + br[t]*y[t-1]
		}
		copy(row(dst, bb, i), y)
	})
	return nil
}
