package nfa

import (
	"math"
	"runtime"
	"testing"
)

// gradBits returns F and every gradient element of m at x, for bit-for-bit comparisons.
func gradBits(m *Model, x []float64) []uint64 {
	gr := m.NewGrad()
	out := []uint64{math.Float64bits(m.Gradient(gr, x))}
	for _, v := range [][]float64{gr.Mean, gr.SVar, gr.Ring, gr.Breve, gr.WVarF, gr.WVarG, gr.VnMean, gr.VnVar,
		gr.VmMean, gr.VmVar, gr.VPhiMean, gr.VPhiVar} {
		for _, g := range v {
			out = append(out, math.Float64bits(g))
		}
	}
	return out
}

// TestEvalSameOnAnyCores checks that F and its gradient do not depend on how many cores run the blocks of time
// steps: one, two and eight (more than there are blocks at T = 50) give the same bits.
func TestEvalSameOnAnyCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, dyn := range []bool{false, true} {
		m, x := smallModelT(t, 50, dyn, GaussHermite, true, 5)
		var ref []uint64
		for _, procs := range []int{1, 2, 8} {
			runtime.GOMAXPROCS(procs)
			got := gradBits(m, x)
			if ref == nil {
				ref = got
				continue
			}
			for i := range ref {
				if got[i] != ref[i] {
					t.Fatalf("dynamic=%v: element %d differs with GOMAXPROCS=%d: %v vs %v", dyn, i, procs,
						math.Float64frombits(got[i]), math.Float64frombits(ref[i]))
				}
			}
		}
	}
}

// TestUpdateReusesLastEvaluation checks the reuse of the last evaluation in Update: after Value at the same point
// and state Update skips one evaluation and ends in the same state, bit for bit, as without it; after a change of
// an exported variance (which changes the squared errors the hyperparameter update reads) it evaluates again and
// again ends as a model that never saw the old point.
func TestUpdateReusesLastEvaluation(t *testing.T) {
	for _, dyn := range []bool{false, true} {
		fresh, x := smallModelT(t, 20, dyn, GaussHermite, true, 9)
		warm, _ := smallModelT(t, 20, dyn, GaussHermite, true, 9)
		warm.Value(x)
		n0, w0 := fresh.evals, warm.evals
		if err := fresh.Update(x); err != nil {
			t.Fatal(err)
		}
		if err := warm.Update(x); err != nil {
			t.Fatal(err)
		}
		if got, want := warm.evals-w0, fresh.evals-n0-1; got != want {
			t.Errorf("dynamic=%v: Update after Value made %d evaluations, want %d", dyn, got, want)
		}
		if !sameBits(warm.State(), fresh.State()) {
			t.Errorf("dynamic=%v: Update after Value ends elsewhere than without it", dyn)
		}

		changed, _ := smallModelT(t, 20, dyn, GaussHermite, true, 9)
		stale, _ := smallModelT(t, 20, dyn, GaussHermite, true, 9)
		stale.Value(x)
		for _, m := range []*Model{changed, stale} {
			m.WVarF[len(m.WVarF)-1] *= 4 // a second-layer bias variance: every output variance moves
			if err := m.Update(x); err != nil {
				t.Fatal(err)
			}
		}
		if !sameBits(stale.State(), changed.State()) {
			t.Errorf("dynamic=%v: Update used an evaluation at a state that had since changed", dyn)
		}
		if sameBits(stale.State(), warm.State()) {
			t.Errorf("dynamic=%v: the changed variance did not change the update (the check above proves nothing)", dyn)
		}

		// The same with the data changed in place (X is exported).
		changed, _ = smallModelT(t, 20, dyn, GaussHermite, true, 9)
		stale, _ = smallModelT(t, 20, dyn, GaussHermite, true, 9)
		stale.Value(x)
		for _, m := range []*Model{changed, stale} {
			m.X[0] += 3
			if err := m.Update(x); err != nil {
				t.Fatal(err)
			}
		}
		if !sameBits(stale.State(), changed.State()) {
			t.Errorf("dynamic=%v: Update used an evaluation on data that had since changed", dyn)
		}
	}
}

// TestGradAfterUpdate checks that Grad at the point of the last Update takes the gradient Update's last evaluation
// left, with no evaluation of its own, and that it is the gradient a fresh evaluation gives, bit for bit; at another
// point, or after a state change, Grad evaluates again.
func TestGradAfterUpdate(t *testing.T) {
	for _, dyn := range []bool{false, true} {
		m, x := smallModelT(t, 20, dyn, GaussHermite, true, 9)
		if err := m.Update(x); err != nil {
			t.Fatal(err)
		}
		g, want := make([]float64, len(x)), make([]float64, len(x))
		n := m.evals
		F := m.Grad(g, x)
		if m.evals != n {
			t.Errorf("dynamic=%v: Grad after Update evaluated %d times, want 0", dyn, m.evals-n)
		}
		Fw := m.eval(x, m.grad)
		copy(want, m.grad.Mean)
		if math.Float64bits(F) != math.Float64bits(Fw) || !sameBits(g, want) {
			t.Errorf("dynamic=%v: Grad after Update differs from a fresh evaluation (F %v vs %v)", dyn, F, Fw)
		}

		// After a Value elsewhere, and after a change of a variance, Grad must evaluate.
		if err := m.Update(x); err != nil {
			t.Fatal(err)
		}
		y := append([]float64(nil), x...)
		y[0] += 0.1
		m.Value(y)
		n = m.evals
		m.Grad(g, x)
		if m.evals != n+1 {
			t.Errorf("dynamic=%v: Grad after a Value elsewhere made %d evaluations, want 1", dyn, m.evals-n)
		}
		if err := m.Update(x); err != nil {
			t.Fatal(err)
		}
		m.WVarF[0] *= 2
		n = m.evals
		m.Grad(g, x)
		if m.evals != n+1 {
			t.Errorf("dynamic=%v: Grad after a variance change made %d evaluations, want 1", dyn, m.evals-n)
		}
	}
}
