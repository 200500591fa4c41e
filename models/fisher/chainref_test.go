package fisher

import (
	"math"
	"testing"

	"github.com/geovb/geovb/internal/chainref"
)

// ChainNatGrad is the reference the backend conformance suite checks backend.ChainNatGrad against
// (internal/chainref), bit for bit, on chains of 1 to 300 steps, in place and not.
func TestChainNatGradMatchesReference(t *testing.T) {
	r := newRand(7)
	for _, T := range []int{1, 2, 3, 17, 300} {
		breve, ring := randChain(r, T)
		g := make([]float64, T)
		for i := range g {
			g[i] = r.NormFloat64()
		}
		got, want := make([]float64, T), append([]float64(nil), g...)
		ChainNatGrad(got, g, breve, ring)
		chainref.NatGrad(want, want, breve, ring)
		for i := range got {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("T = %d, t = %d: ChainNatGrad %.17g, chainref.NatGrad %.17g", T, i, got[i], want[i])
			}
		}
	}
}
