package nnvb

import (
	"fmt"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/tensor"
)

// Checkpoint identity (run.SaveCheckpoint).
const (
	checkpointMethod  = "nnvb"
	checkpointVersion = 1
)

// state is everything a resumed fit needs: the point λ_t = (W₁, b₁, W₂, b₂), the momentum Y_t of Algorithm 1, the
// draw counter, the smoother and the traces so far. The K-FAC statistics are recomputed from each iteration's draws
// (no average across iterations), so they need no saving. Float64 values round-trip exactly through gob, so a
// resumed run continues bit for bit.
type state struct {
	Iter               int
	D                  int
	W1, W2, B1, B2     []float64
	Y1, Y2, YB1, YB2   []float64
	Draws              uint64
	Smoother           run.SmootherState
	LB, Smoothed, Orth []float64
}

func (w *work) tensors(st *state) []struct {
	t *T
	v *[]float64
} {
	return []struct {
		t *T
		v *[]float64
	}{{w.w1, &st.W1}, {w.w2, &st.W2}, {w.b1, &st.B1}, {w.b2, &st.B2}, {w.y1, &st.Y1}, {w.y2, &st.Y2}, {w.yb1, &st.YB1}, {w.yb2, &st.YB2}}
}

// save writes the state after iter iterations to path.
func (w *work) save(path string, iter int, sm *run.Smoother, res *Result) error {
	st := state{Iter: iter, D: w.d, Draws: w.draws, Smoother: sm.Save(), LB: res.LB, Smoothed: res.Smoothed, Orth: res.Orth}
	for _, p := range w.tensors(&st) {
		h := tensor.NewHost(1, p.t.Rows(), p.t.Cols())
		if err := w.b.Download(h, p.t); err != nil {
			return err
		}
		*p.v = h.Storage().Host()
	}
	return run.SaveCheckpoint(path, checkpointMethod, checkpointVersion, st)
}

// resume loads the checkpoint at path into w, sm and res and returns the iterations it holds.
func (w *work) resume(path string, sm *run.Smoother, res *Result) (int, error) {
	var st state
	if err := run.LoadCheckpoint(path, checkpointMethod, checkpointVersion, &st); err != nil {
		return 0, err
	}
	d := w.d
	for _, p := range w.tensors(&st) {
		if st.D != d || len(*p.v) != p.t.Rows()*p.t.Cols() {
			return 0, fmt.Errorf("%s: %s: checkpoint of dimension %d, the model has d = %d: %w", opName, path, st.D, d, run.ErrCheckpoint)
		}
		h, err := tensor.FromSlice(*p.v, 1, p.t.Rows(), p.t.Cols())
		if err != nil {
			return 0, err
		}
		if err := w.b.Upload(p.t, h); err != nil {
			return 0, err
		}
	}
	w.draws = st.Draws
	sm.Restore(st.Smoother)
	res.LB, res.Smoothed, res.Orth = st.LB, st.Smoothed, st.Orth
	return st.Iter, nil
}
