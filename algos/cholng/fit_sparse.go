package cholng

import (
	"fmt"
	"math"
	"time"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/rng"
)

// SparseResult is the outcome of FitSparse.
type SparseResult struct {
	run.Result
	LHat   float64   // mean of h(θ) over EvalDraws fresh draws (notes §5.4)
	Means  []float64 // block means of h
	Lambda []float64 // final λ (copy)
	Time   time.Duration
}

// sparseCheckpoint is the resumable state of FitSparse (method "cholng-sparse", version 1).
type sparseCheckpoint struct {
	Iter          int
	Lambda, M, S  []float64
	Means         []float64
	Sum           float64
	N, Kind, Opt  int
	NumParams, Dm int
}

// FitSparse runs Snngm or Adam (cfg.Optimizer, cfg.Kind; cfg.Param and cfg.Init0 are ignored: the family fixes
// them) on a structured family from its current λ, with the stopping rule and run control of Fit. Draw t uses z
// from stream 0 at offset t·d, the evaluation draws stream 1. Snngm uses α = 0.001√ℓ_λ with ℓ_λ the pattern's free
// entries (notes §8.7) and the family's norm (Euclidean for Block, Riemannian for Arrow). With ctl.CheckpointEvery
// the state is saved to ctl.CheckpointPath and resume = true continues from it bit for bit.
func FitSparse(f Sparse, m Model, cfg Config, ctl run.Control, resume bool) (*SparseResult, error) {
	if err := ctl.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	d, np := f.Dim(), f.NumParams()
	if m.Dim() != d {
		return nil, fmt.Errorf("cholng: model dimension %d, family %d", m.Dim(), d)
	}
	lam := f.Lambda()
	grad, mo, so := make([]float64, np), make([]float64, np), make([]float64, np)
	alpha := cfg.Alpha
	if alpha == 0 {
		alpha = 0.001 * math.Sqrt(float64(np))
	}
	rule := &StopRule{Block: cfg.Block, Tol: cfg.Tol}
	done, t := 0, 0
	if resume {
		var cp sparseCheckpoint
		if err := run.LoadCheckpoint(ctl.CheckpointPath, "cholng-sparse", 1, &cp); err != nil {
			return nil, err
		}
		if cp.NumParams != np || cp.Dm != d || cp.Kind != int(cfg.Kind) || cp.Opt != int(cfg.Optimizer) || len(cp.Lambda) != np {
			return nil, fmt.Errorf("cholng: checkpoint %s is for another configuration", ctl.CheckpointPath)
		}
		copy(lam, cp.Lambda)
		copy(mo, cp.M)
		copy(so, cp.S)
		t, done = cp.Iter, cp.Iter
		rule.Means, rule.sum, rule.n = cp.Means, cp.Sum, cp.N
	}
	start := time.Now()
	loop := ctl.Start(cfg.DefaultMaxIter, done)
	ctr := rng.Counter{Seed: cfg.Seed}
	for loop.Next() {
		it := loop.Iter()
		ctr.Advance(it * d).FillNormal(f.Z())
		h, n2, err := f.Gradient(m, cfg.Kind, grad)
		if err != nil {
			loop.Fail(err)
			break
		}
		if !run.Finite(h, n2) {
			loop.Report(run.Record{Objective: h, GradNorm: math.Sqrt(n2), Step: math.NaN(), Smoothed: math.NaN()})
			loop.Finish(run.NotFinite)
			break
		}
		t++
		var sc float64
		if cfg.Optimizer == Snngm {
			// Table 4 with bias correction; ‖g̃‖ = 0 (exact STL optimum) gives a zero direction (notes §8.3).
			inv := 0.0
			if n2 > 0 {
				inv = (1 - cfg.Beta) / math.Sqrt(n2)
			}
			sc = alpha / (1 - math.Pow(cfg.Beta, float64(t)))
			for k, g := range grad {
				mo[k] = cfg.Beta*mo[k] + inv*g
				lam[k] += sc * mo[k]
			}
		} else {
			bc1, bc2 := 1-math.Pow(cfg.Beta1, float64(t)), 1-math.Pow(cfg.Beta2, float64(t))
			sc = cfg.LR
			for k, g := range grad {
				mo[k] = cfg.Beta1*mo[k] + (1-cfg.Beta1)*g
				so[k] = cfg.Beta2*so[k] + (1-cfg.Beta2)*g*g
				lam[k] += cfg.LR / bc1 * mo[k] / (math.Sqrt(so[k]/bc2) + cfg.Eps)
			}
		}
		stop := rule.Add(h)
		sm := math.NaN()
		if k := len(rule.Means); k > 0 {
			sm = rule.Means[k-1]
		}
		loop.Report(run.Record{Objective: h, Smoothed: sm, GradNorm: math.Sqrt(n2), Step: sc})
		if stop && !cfg.NoStop {
			loop.Finish(run.Converged)
		}
		if loop.CheckpointDue() {
			cp := sparseCheckpoint{Iter: loop.Iter(), Lambda: lam, M: mo, S: so, Means: rule.Means, Sum: rule.sum,
				N: rule.n, Kind: int(cfg.Kind), Opt: int(cfg.Optimizer), NumParams: np, Dm: d}
			if err := run.SaveCheckpoint(ctl.CheckpointPath, "cholng-sparse", 1, cp); err != nil {
				loop.Fail(err)
			}
		}
	}
	res := &SparseResult{Result: loop.Result(), Means: rule.Means}
	if res.Reason == run.Failed {
		return res, res.Err
	}
	ev := rng.Counter{Seed: cfg.Seed, Stream: 1}
	sum := 0.0
	for s := 0; s < cfg.EvalDraws; s++ {
		ev.Advance(s * d).FillNormal(f.Z())
		h, err := f.Eval(m)
		if err != nil {
			return res, err
		}
		sum += h
	}
	res.LHat = sum / float64(cfg.EvalDraws)
	res.Lambda = append([]float64(nil), lam...)
	res.Time = time.Since(start)
	return res, nil
}
