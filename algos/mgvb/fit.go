package mgvb

import (
	"errors"
	"fmt"
	"math"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// Checkpoint identity (run.SaveCheckpoint).
const (
	checkpointMethod  = "mgvb"
	checkpointVersion = 1
)

// state is everything a resumed fit needs; float64 values round-trip exactly, so a resumed run continues bit for bit.
type state struct {
	Iter                         int
	Mu, Sigma, MMu, MS           []float64
	CcMu, CcS, BestMu, BestSigma []float64
	HbarPrev                     []float64
	Draws                        uint64
	Smoothers                    []run.SmootherState
	BestSmoothed                 []float64
	BestIter, StoppedAt          []int
	Safeguard, Clipped           int
}

func (w *work) get(t *T) ([]float64, error) {
	h := tensor.NewHost(t.Batch(), t.Rows(), t.Cols())
	if err := w.b.Download(h, t); err != nil {
		return nil, err
	}
	return h.Storage().Host(), nil
}

func (w *work) put(t *T, v []float64) error {
	h, err := tensor.FromSlice(v, t.Batch(), t.Rows(), t.Cols())
	if err != nil {
		return err
	}
	return w.b.Upload(t, h)
}

// stepAt is the schedule of the authors' code: ε₀ for t ≤ τ, then ε₀τ/t.
func (c *Config) stepAt(t int) float64 {
	if c.Tau > 0 && t > c.Tau {
		return c.Step * float64(c.Tau) / float64(t)
	}
	return c.Step
}

// clip rescales each fit's Euclidean gradient to norm Clip when above it (before preconditioning, as the authors' code does).
func (w *work) clip() error {
	if w.cfg.Clip == 0 {
		return nil
	}
	f := make([]float64, w.B)
	any := false
	for k, n := range w.gnorm {
		f[k] = 1
		if n > w.cfg.Clip {
			f[k] = w.cfg.Clip / n
			any = true
			w.clipped++
		}
	}
	if !any {
		return nil
	}
	if err := w.scalars(f); err != nil {
		return err
	}
	if err := w.b.ScaleRows(w.gMu, w.gMu, w.sc); err != nil {
		return err
	}
	return w.b.ScaleRows(w.gS, w.gS, w.sc)
}

// natural writes the natural gradient of eq. (5.2), Σg_μ and sym(ΣG_ΣΣ) (the paper's form, half the exact Fisher
// natural gradient for Σ: the Fisher on symmetric directions is ½(Σ⁻¹ ⊗ Σ⁻¹)), or the Euclidean gradient for the Plain variant.
func (w *work) natural() error {
	b := w.b
	if w.cfg.Plain {
		if err := b.Copy(w.nMu, w.gMu); err != nil {
			return err
		}
		if err := b.Copy(w.nS, w.gS); err != nil {
			return err
		}
		return b.Symmetrize(w.nS)
	}
	if err := b.Gemm(blasN, blasN, 1, w.sigma, w.gMu, 0, w.nMu); err != nil {
		return err
	}
	// Σ sym(G_Σ) Σ, the Riemannian gradient of the affine-invariant metric (paper 000 eq. (5.2))
	return w.spd.RiemannianGrad(b, w.nS, w.sigma, w.gS)
}

// retract moves Σ ← R_Σold(ε m_Σ) and refreshes L. The retraction is SPD in exact arithmetic
// (Σ + ξ + ½ξΣ⁻¹ξ = ½Σ + ½(Σ + ξ)Σ⁻¹(Σ + ξ) ⪰ ½Σ);
// a failed Cholesky (round-off) halves the step up to four times and then keeps Σ, as the authors' code's safeguard
// does, counting each halving.
func (w *work) retract(eps float64) error {
	b := w.b
	if err := b.Copy(w.sigmaOld, w.sigma); err != nil {
		return err
	}
	if err := b.Copy(w.lOld, w.l); err != nil {
		return err
	}
	for try := 0; ; try++ {
		if err := w.spd.Retract(b, w.sigma, w.sigmaOld, w.mS, eps); err != nil {
			return err
		}
		err := w.chol(w.l, w.sigma)
		if err == nil {
			return nil
		}
		if !errors.Is(err, backend.ErrNotPositiveDefinite) {
			return err
		}
		w.safeguard++
		if try == 3 {
			if err := b.Copy(w.sigma, w.sigmaOld); err != nil {
				return err
			}
			return b.Copy(w.l, w.lOld)
		}
		eps /= 2
	}
}

func (w *work) finite() bool {
	for k := range w.lb {
		if !run.Finite(w.lb[k], w.gnorm[k]) {
			return false
		}
	}
	return true
}

func (w *work) fit(ctl run.Control) (*Result, error) {
	b, cfg, B := w.b, w.cfg, w.B
	sm := make([]run.Smoother, B)
	res := &Result{BestSmoothed: make([]float64, B), BestIter: make([]int, B), StoppedAt: make([]int, B)}
	for k := range sm {
		sm[k] = run.Smoother{Window: cfg.Window, Patience: cfg.Patience, BurnIn: cfg.BurnIn}
		res.BestSmoothed[k] = math.NaN()
	}
	done := 0
	if ctl.Resume {
		var st state
		if err := run.LoadCheckpoint(ctl.CheckpointPath, checkpointMethod, checkpointVersion, &st); err != nil {
			return nil, err
		}
		if len(st.Mu) != B*w.d || len(st.Sigma) != B*w.d*w.d || len(st.Smoothers) != B {
			return nil, fmt.Errorf("%s: %s holds %d fits of dimension %d, want %d of %d: %w", opName, ctl.CheckpointPath,
				len(st.Smoothers), len(st.Mu)/max(1, len(st.Smoothers)), B, w.d, run.ErrCheckpoint)
		}
		for _, p := range []struct {
			t *T
			v []float64
		}{{w.mu, st.Mu}, {w.sigma, st.Sigma}, {w.mMu, st.MMu}, {w.mS, st.MS}, {w.ccMu, st.CcMu}, {w.ccS, st.CcS}, {w.bestMu, st.BestMu}, {w.bestS, st.BestSigma}} {
			if err := w.put(p.t, p.v); err != nil {
				return nil, err
			}
		}
		if err := w.chol(w.l, w.sigma); err != nil {
			return nil, err
		}
		copy(w.hbarPrev, st.HbarPrev)
		w.draws, w.safeguard, w.clipped = st.Draws, st.Safeguard, st.Clipped
		for k := range sm {
			sm[k].Restore(st.Smoothers[k])
		}
		copy(res.BestSmoothed, st.BestSmoothed)
		copy(res.BestIter, st.BestIter)
		copy(res.StoppedAt, st.StoppedAt)
		done = st.Iter
	} else {
		// Iteration 0: Y₀ = the natural gradient at λ₀ (Algorithm 1), clipped when ClipInit (against premature stopping).
		if err := w.grad(); err != nil {
			return nil, err
		}
		if !w.finite() {
			return nil, ErrNotFinite
		}
		if cfg.ClipInit {
			if err := w.clip(); err != nil {
				return nil, err
			}
		}
		if err := w.natural(); err != nil {
			return nil, err
		}
		for _, p := range [][2]*T{{w.mMu, w.nMu}, {w.mS, w.nS}, {w.bestMu, w.mu}, {w.bestS, w.sigma}} {
			if err := b.Copy(p[0], p[1]); err != nil {
				return nil, err
			}
		}
	}
	loop := ctl.Start(defaultMaxIter, done)
	var runErr error
	for loop.Next() {
		t := loop.Iter() + 1
		eps := cfg.stepAt(t)
		err := w.step(eps)
		if err != nil {
			loop.Fail(err)
			runErr = err
			break
		}
		if !w.finite() {
			loop.Finish(run.NotFinite)
			runErr = ErrNotFinite
			break
		}
		var lbMean, smMean, gMean float64
		stopped := 0
		for k := 0; k < B; k++ {
			lbMean += w.lb[k] / float64(B)
			gMean += w.gnorm[k] / float64(B)
			if res.StoppedAt[k] != 0 {
				stopped++
				smMean += res.BestSmoothed[k] / float64(B)
				continue
			}
			s, improved, stop := sm[k].Add(w.lb[k])
			smMean += s / float64(B)
			if improved {
				res.BestSmoothed[k], res.BestIter[k] = s, t
				if err := b.Copy(w.bestMu.Item(k), w.mu.Item(k)); err != nil {
					return nil, err
				}
				if err := b.Copy(w.bestS.Item(k), w.sigma.Item(k)); err != nil {
					return nil, err
				}
			}
			if stop {
				res.StoppedAt[k] = t
				stopped++
			}
		}
		loop.Report(run.Record{Objective: lbMean, Smoothed: smMean, GradNorm: gMean, Step: eps,
			Extra: map[string]float64{"clipped": float64(w.clipped), "safeguard": float64(w.safeguard)}})
		if stopped == B && cfg.Patience > 0 {
			loop.Finish(run.Patience)
		}
		if loop.CheckpointDue() {
			if err := w.save(ctl.CheckpointPath, loop.Iter(), sm, res); err != nil {
				loop.Fail(err)
				runErr = err
			}
		}
	}
	res.Result = loop.Result()
	res.Safeguard, res.Clipped = w.safeguard, w.clipped
	var err error
	out := func(t *T) *T {
		h := tensor.NewHost(t.Batch(), t.Rows(), t.Cols())
		if e := b.Download(h, t); e != nil && err == nil {
			err = e
		}
		return h
	}
	res.Mu, res.Sigma, res.LastMu, res.LastSigma = out(w.bestMu), out(w.bestS), out(w.mu), out(w.sigma)
	if runErr == nil {
		runErr = err
	}
	return res, runErr
}

// step is one iteration of Algorithm 2 in the authors' code's order: retract Σ, move μ, draw at the new point,
// estimate and clip the gradient, precondition, transport the momentum and mix.
func (w *work) step(eps float64) error {
	b, om := w.b, w.cfg.Momentum
	if err := w.retract(eps); err != nil {
		return err
	}
	if err := b.Axpby(w.mu, 1, w.mu, eps, w.mMu); err != nil {
		return err
	}
	if err := w.grad(); err != nil {
		return err
	}
	if !w.finite() {
		return nil
	}
	if err := w.clip(); err != nil {
		return err
	}
	if err := w.natural(); err != nil {
		return err
	}
	if !w.cfg.IdentityTransport {
		hook := w.cfg.transportHook
		if hook != nil {
			if err := b.Copy(w.mPrev, w.mS); err != nil {
				return err
			}
		}
		if err := w.spd.Transport(b, w.mS, w.sigmaOld, w.sigma, w.mS); err != nil {
			return err
		}
		if hook != nil {
			if err := hook(b, w.sigmaOld, w.sigma, w.mPrev, w.mS); err != nil {
				return err
			}
		}
	}
	if err := b.Axpby(w.mS, om, w.mS, 1-om, w.nS); err != nil {
		return err
	}
	return b.Axpby(w.mMu, om, w.mMu, 1-om, w.nMu)
}

func (w *work) save(path string, iter int, sm []run.Smoother, res *Result) error {
	st := state{Iter: iter, HbarPrev: w.hbarPrev, Draws: w.draws, BestSmoothed: res.BestSmoothed, BestIter: res.BestIter,
		StoppedAt: res.StoppedAt, Safeguard: w.safeguard, Clipped: w.clipped}
	for _, p := range []struct {
		dst *[]float64
		t   *T
	}{{&st.Mu, w.mu}, {&st.Sigma, w.sigma}, {&st.MMu, w.mMu}, {&st.MS, w.mS}, {&st.CcMu, w.ccMu}, {&st.CcS, w.ccS}, {&st.BestMu, w.bestMu}, {&st.BestSigma, w.bestS}} {
		v, err := w.get(p.t)
		if err != nil {
			return err
		}
		*p.dst = v
	}
	for k := range sm {
		st.Smoothers = append(st.Smoothers, sm[k].Save())
	}
	return run.SaveCheckpoint(path, checkpointMethod, checkpointVersion, st)
}
