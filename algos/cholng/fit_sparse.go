package cholng

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/rng"
)

// SparseResult is the outcome of FitSparse.
type SparseResult struct {
	run.Result
	LHat   float64   // mean of h(θ) over EvalDraws fresh draws (§8)
	Means  []float64 // block means of h
	Lambda []float64 // final λ (copy)
	Time   time.Duration
}

// sparseCheckpoint is the resumable state of FitSparse (method "cholng-sparse", version sparseCheckpointVersion):
// the parameter buffer and the optimiser moments in the family's flat layout, which is a function of the group
// sizes (Sizes, in the user's order) and d (Dm; the global block has the rest). Version 3: the groups are bucketed by size (one
// bucket per distinct size) instead of runs of consecutive equal sizes; a version-2 file is refused by
// run.LoadCheckpoint with a message naming both versions.
type sparseCheckpoint struct {
	Iter          int
	P, M, S       []float64
	Means         []float64
	Sum           float64
	N, Kind, Opt  int
	NumParams, Dm int
	Sizes         []int
}

const sparseCheckpointVersion = 3

// FitSparse runs Snngm or Adam (cfg.Optimizer, cfg.Kind; cfg.Param and cfg.Init0 are ignored: the family fixes
// them) on a structured family from its current λ, with the stopping rule and run control of Fit. Every iteration
// runs on the family's backend: draw, gradient, norm and the optimiser step; only θ, ∇log p and a few scalars cross
// to the host (the model is evaluated there). Draw t uses z from stream 0 at offset t·d, the evaluation draws
// stream 1. Snngm uses α = 0.001√ℓ_λ with ℓ_λ the pattern's free entries (a dense d(d+1)/2 would inflate α) and the family's norm
// (Euclidean for Block, Riemannian for Arrow). It runs under ctx and cfg.Control: with Control.CheckpointEvery the
// state is saved to Control.CheckpointPath and Control.Resume continues from it bit for bit.
func FitSparse(ctx context.Context, f Sparse, m model.Density, cfg Config) (*SparseResult, error) {
	ctl := cfg.Control.WithContext(ctx)
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
	c := f.core()
	b := c.b
	opt, err := newOptimizer(b, cfg, [][2]*T{{c.pw, c.gw}}, np)
	if err != nil {
		return nil, err
	}
	defer opt.close()
	st := opt.st[0]
	rule := &StopRule{Block: cfg.Block, Tol: cfg.Tol}
	done := 0
	if ctl.Resume {
		var cp sparseCheckpoint
		if err := run.LoadCheckpoint(ctl.CheckpointPath, "cholng-sparse", sparseCheckpointVersion, &cp); err != nil {
			return nil, err
		}
		if cp.NumParams != np || cp.Dm != d || cp.Kind != int(cfg.Kind) || cp.Opt != int(cfg.Optimizer) ||
			!slices.Equal(cp.Sizes, c.sizes) ||
			len(cp.P) != c.plen || len(cp.M) != c.plen || (st.s != nil && len(cp.S) != c.plen) {
			return nil, fmt.Errorf("cholng: checkpoint %s is for another configuration: %w", ctl.CheckpointPath, run.ErrCheckpoint)
		}
		if err := firstError(c.upFlat(c.pbuf, cp.P), c.upFlat(st.m, cp.M)); err != nil {
			return nil, err
		}
		if st.s != nil {
			if err := c.upFlat(st.s, cp.S); err != nil {
				return nil, err
			}
		}
		opt.t, done = cp.Iter, cp.Iter
		rule.Means, rule.sum, rule.n = cp.Means, cp.Sum, cp.N
	}
	start := time.Now()
	loop := ctl.Start(defaultMaxIter, done)
	iterate(loop, f, m, cfg, d, opt, rule, func(iter int) error {
		return saveSparseCheckpoint(c, opt, rule, iter, ctl.CheckpointPath, cfg)
	})
	res := &SparseResult{Result: loop.Result(), Means: rule.Means}
	if res.Reason == run.Failed {
		return res, res.Err
	}
	ev := rng.Counter{Seed: cfg.Seed, Stream: 1}
	sum := 0.0
	for s := 0; s < cfg.EvalDraws; s++ {
		if err := f.Sample(ev.Advance(s * d)); err != nil {
			return res, err
		}
		h, err := f.Eval(m)
		if err != nil {
			return res, err
		}
		sum += h
	}
	res.LHat = sum / float64(cfg.EvalDraws)
	if res.Lambda, err = f.Lambda(); err != nil {
		return res, err
	}
	res.Time = time.Since(start)
	return res, nil
}

func saveSparseCheckpoint(c *sparseCore, o *optimizer, r *StopRule, iter int, path string, cfg Config) error {
	st := o.st[0]
	p, err := c.downFlat(c.pbuf, c.plen)
	if err != nil {
		return err
	}
	mo, err := c.downFlat(st.m, c.plen)
	if err != nil {
		return err
	}
	var so []float64
	if st.s != nil {
		if so, err = c.downFlat(st.s, c.plen); err != nil {
			return err
		}
	}
	cp := sparseCheckpoint{Iter: iter, P: p, M: mo, S: so, Means: r.Means, Sum: r.sum, N: r.n, Kind: int(cfg.Kind),
		Opt: int(cfg.Optimizer), NumParams: c.np, Dm: c.d, Sizes: c.sizes}
	return run.SaveCheckpoint(path, "cholng-sparse", sparseCheckpointVersion, cp)
}
