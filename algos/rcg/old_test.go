package rcg

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/tensor"
)

// diagQuad is F = ½Σa_i x_i² with the fixed diagonal metric 1/v (natural gradient v ⊙ g), so the Old iterates have
// a closed form per coordinate.
type diagQuad struct{ a, v []float64 }

func (q diagQuad) Dim() int { return len(q.a) }
func (q diagQuad) Value(x []float64) float64 {
	var f float64
	for i, xi := range x {
		f += 0.5 * q.a[i] * xi * xi
	}
	return f
}
func (q diagQuad) Grad(g, x []float64) float64 {
	for i, xi := range x {
		g[i] = q.a[i] * xi
	}
	return q.Value(x)
}
func (q diagQuad) NatGrad(dst, g, x []float64) {
	for i := range g {
		dst[i] = q.v[i] * g[i]
	}
}

// TestOldMultiplierRule checks the Old heuristic (Valpola & Karhunen 2002) against its rule worked out by hand on separable
// quadratics, where −g̃_i = −c_i x_i with c_i = v_i a_i: the first step is the unit natural step x_i(1 − c_i); the
// multiplier of a coordinate then grows ×1.05 while the sign of its step repeats and shrinks ×0.8 when it flips.
// Case 1: c = (0.5, 1.5, 0.3), three iterations, every step accepted. Case 2: c = 2.5 in one dimension: the unit
// step raises F (|1 − 2.5| > 1), is rejected and retried with the multiplier halved (x = −0.25); the next step's
// sign flips, 0.5·0.8 = 0.4 and 0.4·2.5 = 1 lands on the minimum. Tolerance 1e-14 relative (a few roundings).
func TestOldMultiplierRule(t *testing.T) {
	q := diagQuad{a: []float64{2, 1, 3}, v: []float64{0.25, 1.5, 0.1}}
	x0 := []float64{1, -2, 0.5}
	// By hand: per coordinate x_{k+1} = x_k(1 − m_k c), with m_1 = 1 and m_k ← m_{k−1}·(1.05 if 1 − m_{k−1}c > 0,
	// i.e. the step keeps its sign, else 0.8).
	want := [][]float64{
		{0.5, 2 * 0.5, 0.5 * 0.7}, // 1 − c = 0.5, −0.5, 0.7
		{0.5 * (1 - 1.05*0.5), 2 * 0.5 * (1 - 0.8*1.5), 0.35 * (1 - 1.05*0.3)}, // repeat, flip, repeat
	}
	want = append(want, []float64{
		want[1][0] * (1 - 1.05*1.05*0.5), // 1 − 0.525 > 0: repeat
		want[1][1] * (1 - 0.8*0.8*1.5),   // 1 − 1.2 < 0: flip
		want[1][2] * (1 - 1.05*1.05*0.3), // repeat
	})
	for k, w := range want {
		res, err := Minimize(context.Background(), q, x0, Settings{Method: Old, Control: run.Control{MaxIter: k + 1}})
		if err != nil {
			t.Fatal(err)
		}
		for i := range w {
			if math.Abs(res.X[i]-w[i]) > 1e-14*math.Abs(w[i]) {
				t.Errorf("iteration %d: x[%d] = %.17g, want %.17g", k+1, i, res.X[i], w[i])
			}
		}
	}
	one := diagQuad{a: []float64{1}, v: []float64{2.5}}
	res, err := Minimize(context.Background(), one, []float64{1}, Settings{Method: Old,
		Control: run.Control{MaxIter: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if res.X[0] != -0.25 || res.FEvals != 2 {
		t.Errorf("rejected unit step: x = %v after %d evaluations, want −0.25 after 2", res.X[0], res.FEvals)
	}
	res, err = Minimize(context.Background(), one, []float64{1}, Settings{Method: Old,
		Control: run.Control{MaxIter: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(res.X[0]) > 1e-15 {
		t.Errorf("after the flip (multiplier 0.4): x = %v, want 0", res.X[0])
	}
}

// diagQuadBatch runs diagQuad problems of one dimension as a BatchObjective, its arithmetic on the host (the tensors
// go down and up around each call), so that MinimizeBatch's Old can be held against Minimize's on problems whose
// every evaluation is exact or rounds the same way.
type diagQuadBatch struct {
	be  backend.Backend
	qs  []diagQuad
	dim int
}

func (q *diagQuadBatch) Backend() backend.Backend { return q.be }
func (q *diagQuadBatch) Batch() int               { return len(q.qs) }
func (q *diagQuadBatch) Dim() int                 { return q.dim }
func (q *diagQuadBatch) NumFree() int             { return q.dim }
func (q *diagQuadBatch) Swap(i, j int) error {
	q.qs[i], q.qs[j] = q.qs[j], q.qs[i]
	return nil
}

// rows downloads the rows of x, one slice per run.
func (q *diagQuadBatch) rows(x *tensor.Tensor) ([][]float64, error) {
	h := tensor.NewHost(x.Batch(), 1, q.dim)
	if err := q.be.Download(h, x); err != nil {
		return nil, err
	}
	return h.ItemRows(), nil
}

func (q *diagQuadBatch) Value(f []float64, x *tensor.Tensor) error {
	xs, err := q.rows(x)
	for b, xb := range xs {
		f[b] = q.qs[b].Value(xb)
	}
	return err
}

func (q *diagQuadBatch) Grad(f []float64, g, gt, x *tensor.Tensor) error {
	xs, err := q.rows(x)
	if err != nil {
		return err
	}
	gs, gts := make([][]float64, len(xs)), make([][]float64, len(xs))
	for b, xb := range xs {
		gs[b], gts[b] = make([]float64, q.dim), make([]float64, q.dim)
		f[b] = q.qs[b].Grad(gs[b], xb)
		q.qs[b].NatGrad(gts[b], gs[b], xb)
	}
	if err := uploadRows(q.be, g, gs); err != nil {
		return err
	}
	return uploadRows(q.be, gt, gts)
}

func (q *diagQuadBatch) Step(dst, x, p *tensor.Tensor, alpha []float64) error {
	xs, err := q.rows(x)
	if err != nil {
		return err
	}
	ps, err := q.rows(p)
	if err != nil {
		return err
	}
	for b, xb := range xs {
		for i := range xb {
			xb[i] += alpha[b] * ps[b][i] // as Minimize's trial point x + α p
		}
	}
	return uploadRows(q.be, dst, xs)
}

// TestMinimizeBatchOldEnds: the batched Old ends each run as Minimize does, on diagonal quadratics whose Old paths
// are known (TestOldMultiplierRule): run 0 takes accepted steps to the iteration cap; run 1 backtracks once, lands on
// the minimum and stops with g̃ = 0 (Stationary); runs 2 and 3 have a metric that turns −g̃ uphill, so every trial
// raises F and Old shrinks its multipliers until the step no longer moves x or until its bound of 60 halvings, both
// NoDecrease. Run 2 (x = (1, 0, 0), g̃ = (−1, 0, 0)) tries x₁ = 1 + 2⁻ᵏ, whose F = ½x₁² is above ½ for k ≤ 52, and
// 1 + 2⁻⁵³ rounds to 1: 54 trials, the step no longer moves x. Run 3 (g̃ = −10⁶ g) still moves x after 60 halvings:
// 61 trials, the bound. Each run must end with the host's stop reason, iterations, F and gradient evaluation
// counts, and the host's x and F bit for bit (the arithmetic is the same, element by element).
func TestMinimizeBatchOldEnds(t *testing.T) {
	be := testbackend.Open(t)
	ones := []float64{1, 1, 1}
	qs := []diagQuad{
		{a: []float64{2, 1, 3}, v: []float64{0.25, 1.5, 0.1}},
		{a: ones, v: []float64{2.5, 2.5, 2.5}},
		{a: ones, v: []float64{-1, 1, 1}},
		{a: ones, v: []float64{-1e6, -1e6, -1e6}},
	}
	xs := [][]float64{{1, -2, 0.5}, {1, 1, 1}, {1, 0, 0}, {1, -1, 0.5}}
	const maxIter = 6
	s := Settings{Method: Old}
	bq := &diagQuadBatch{be: be, qs: slices.Clone(qs), dim: 3}
	got, err := MinimizeBatch(context.Background(), bq, xs, withControl(s, run.Control{MaxIter: maxIter}))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		reason run.StopReason
		by     Convergence
	}{{run.MaxIter, NotConverged}, {run.Converged, Stationary}, {run.Converged, NoDecrease},
		{run.Converged, NoDecrease}}
	for i, q := range qs {
		h, err := Minimize(context.Background(), q, xs[i], withControl(s, run.Control{MaxIter: maxIter}))
		if err != nil {
			t.Fatal(err)
		}
		g := got[i]
		t.Logf("run %d: host %v (%v) after %d iterations, %d/%d evaluations; batch %v (%v) after %d, %d/%d", i,
			h.Reason, h.ConvergedBy, h.Iters, h.FEvals, h.GEvals, g.Reason, g.ConvergedBy, g.Iters, g.FEvals, g.GEvals)
		if h.Reason != want[i].reason || h.ConvergedBy != want[i].by {
			t.Errorf("run %d: the host ends %v (%v), the test expects %v (%v)", i, h.Reason, h.ConvergedBy,
				want[i].reason, want[i].by)
		}
		if g.Reason != h.Reason || g.ConvergedBy != h.ConvergedBy || g.Iters != h.Iters || g.FEvals != h.FEvals ||
			g.GEvals != h.GEvals {
			t.Errorf("run %d: the batch differs from the host", i)
		}
		if !slices.Equal(g.X, h.X) || g.F != h.F {
			t.Errorf("run %d: batch x %v F %v, host x %v F %v", i, g.X, g.F, h.X, h.F)
		}
	}
	// The unmoved step and the bound end the two uphill runs after 54 and 61 trials.
	if got[2].FEvals != 54 || got[3].FEvals != oldMaxHalvings+1 {
		t.Errorf("uphill runs: %d and %d F evaluations, want 54 and %d", got[2].FEvals, got[3].FEvals,
			oldMaxHalvings+1)
	}
}
