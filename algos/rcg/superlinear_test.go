package rcg

import (
	"context"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/algos/run"
)

// smoothConvex is a smooth strongly convex non-quadratic objective with its minimum 0 at x* = 0 (test 21):
// F(x) = ½xᵀQx + Σ_i c_i(e^{x_i} − 1 − x_i) + Σ_i d_i(cosh x_i − 1), every term ≥ 0 and evaluated without cancellation
// near 0 (so F keeps full relative precision down to ‖x‖ ~ 1e-150 and a parabolic line search stays exact). The
// metric is a smooth, position-dependent diagonal G(x) = diag(1 + ½sin²(x_i + i)), so the approximations of §3.2
// (straight steps, no transport) are exercised. It records the points at which gradients are taken.
type smoothConvex struct {
	q    *mat.SymDense
	c, d []float64
	xs   [][]float64
}

func (o *smoothConvex) Dim() int { return len(o.c) }

// expm1mx returns e^u − 1 − u accurately for all u.
func expm1mx(u float64) float64 {
	if math.Abs(u) > 0.1 {
		return math.Expm1(u) - u
	}
	s, term := 0.0, u*u/2
	for k := 3; k < 30 && term != 0; k++ {
		s += term
		term *= u / float64(k)
	}
	return s
}

func (o *smoothConvex) Value(x []float64) float64 {
	n := len(x)
	var f float64
	for i := range n {
		for j := range n {
			f += 0.5 * x[i] * o.q.At(i, j) * x[j]
		}
		sh := math.Sinh(x[i] / 2)
		f += o.c[i]*expm1mx(x[i]) + o.d[i]*2*sh*sh
	}
	return f
}

func (o *smoothConvex) Grad(g, x []float64) float64 {
	o.xs = append(o.xs, append([]float64(nil), x...))
	for i := range x {
		var s float64
		for j := range x {
			s += o.q.At(i, j) * x[j]
		}
		g[i] = s + o.c[i]*math.Expm1(x[i]) + o.d[i]*math.Sinh(x[i])
	}
	return o.Value(x)
}

func (o *smoothConvex) NatGrad(dst, g, x []float64) {
	for i := range x {
		s := math.Sin(x[i] + float64(i))
		dst[i] = g[i] / (1 + 0.5*s*s)
	}
}

func norm(x []float64) float64 { return math.Sqrt(dot(x, x)) }

// TestAppendixASuperlinear is test 21 (Theorem 1, Appendix A): near the optimum of a smooth strongly convex
// non-quadratic problem, approximate RCG with an exact line search (parabolic refits, exact up to rounding here) and
// a restart every n iterations converges n-step quadratically, ‖x_{k+n} − x*‖ ≤ C‖x_k − x*‖². The ratio
// log e_{k+1} / log e_k over one n-step cycle tends to 2 for quadratic and to 1 for linear convergence. Over the
// cycles that start with 1e-14 < e_k < 0.05 (below 1e-14 the relative rounding of F, ~1e-16, not the method, limits
// the contraction per cycle to ~1e-15) RCG must show at least 2 cycles, all with ratio ≥ 1.8, and RG with the same
// line search (linear convergence) must stay below 1.4.
func TestAppendixASuperlinear(t *testing.T) {
	const n = 4
	q := randSPD(newRand(21), n, 0.5)
	x0 := []float64{0.06, -0.05, 0.04, -0.05}
	ratios := func(m Method) (rs, es []float64) {
		obj := &smoothConvex{q: q, c: []float64{1, 0.5, 2, 1.5}, d: []float64{0.3, 1, 0.2, 0.7}}
		if _, err := Minimize(context.Background(), obj, x0, Settings{Method: m, RestartEvery: n,
			LS: LineSearch{Refine: 40}, Control: run.Control{MaxIter: 6 * n}}); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < len(obj.xs); k += n {
			es = append(es, norm(obj.xs[k]))
		}
		for k := 0; k+1 < len(es); k++ {
			if es[k] < 0.05 && es[k] > 1e-14 {
				rs = append(rs, math.Log(es[k+1])/math.Log(es[k]))
			}
		}
		return rs, es
	}
	rr, er := ratios(RCG)
	gr, eg := ratios(RG)
	t.Logf("RCG errors at cycle starts %.3g, log ratios %.3g", er, rr)
	t.Logf("RG  errors at cycle starts %.3g, log ratios %.3g", eg, gr)
	if len(rr) < 2 {
		t.Errorf("RCG: %d cycles in range, want ≥ 2", len(rr))
	}
	for _, v := range rr {
		if v < 1.8 {
			t.Errorf("RCG: cycle log ratio %.3g, want ≥ 1.8 (quadratic)", v)
		}
	}
	for _, v := range gr {
		if v >= 1.4 {
			t.Errorf("RG: cycle log ratio %.3g, want < 1.4 (linear)", v)
		}
	}
}
