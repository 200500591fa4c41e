package nnvb

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/internal/testbackend"
)

// TestCheckpointResume: a run interrupted (context cancelled after iteration 13, last checkpoint at iteration 10)
// and resumed from its checkpoint reproduces the uninterrupted 30-iteration run bit for bit on the same backend —
// the lower-bound, smoothed and orthogonality traces and the final W₁, b₁, W₂, b₂ — for the natural-gradient and
// the plain variant. A checkpoint of another method or of another dimension is refused before any iteration.
func TestCheckpointResume(t *testing.T) {
	b := testbackend.Open(t)
	m := toy3()
	p, err := RandomInit(b, 3, 4, []float64{0.2, -0.1, 0.4})
	if err != nil {
		t.Fatal(err)
	}
	const iters = 30
	for _, plain := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.S, cfg.Seed, cfg.Plain, cfg.TrackOrth, cfg.Step, cfg.Tau = 8, 5, plain, true, 0.05, 12
		full, err := fitFrom(b, m, p, cfg, run.Control{MaxIter: iters})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "nnvb.ck")
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		cut, err := fitFrom(b, m, p, cfg, run.Control{MaxIter: iters, Ctx: ctx, CheckpointEvery: 5, CheckpointPath: path,
			Recorder: run.Func(func(run.Record) {
				if n++; n == 13 {
					cancel()
				}
			})})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if cut.Reason != run.Cancelled || cut.Iters != 13 {
			t.Fatalf("plain=%v: interrupted run: %v after %d iterations", plain, cut.Reason, cut.Iters)
		}
		rc := cfg
		res, err := fitFrom(b, m, p, rc, run.Control{MaxIter: iters, CheckpointPath: path, Resume: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.Iters != iters || len(res.LB) != iters || len(res.Orth) != iters {
			t.Fatalf("plain=%v: resumed run: %d iterations, %d LB values, %d orthogonality values", plain, res.Iters, len(res.LB), len(res.Orth))
		}
		for name, pair := range map[string][2][]float64{
			"LB": {full.LB, res.LB}, "smoothed": {full.Smoothed, res.Smoothed}, "orth": {full.Orth, res.Orth},
			"W1": {full.W1, res.W1}, "b1": {full.B1, res.B1}, "W2": {full.W2, res.W2}, "b2": {full.B2, res.B2},
		} {
			for i := range pair[0] {
				// Bit-for-bit: NaN (the smoother's first values) must match NaN.
				if a, c := pair[0][i], pair[1][i]; a != c && !(a != a && c != c) {
					t.Fatalf("plain=%v: %s[%d]: uninterrupted %v, resumed %v", plain, name, i, a, c)
				}
			}
		}
	}
	// Wrong method, wrong dimension.
	dir := t.TempDir()
	other := filepath.Join(dir, "other")
	if err := run.SaveCheckpoint(other, "mgvb", 1, struct{ Iter int }{3}); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	if _, err := fitFrom(b, m, p, cfg, run.Control{MaxIter: 5, CheckpointPath: other, Resume: true}); !errors.Is(err, run.ErrCheckpoint) {
		t.Errorf("MGVB checkpoint: %v, want ErrCheckpoint", err)
	}
	ck := filepath.Join(dir, "d3")
	if _, err := fitFrom(b, m, p, cfg, run.Control{MaxIter: 4, CheckpointEvery: 2, CheckpointPath: ck}); err != nil {
		t.Fatal(err)
	}
	p2, err := RandomInit(b, 2, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	m2 := newGauss([]float64{0, 0}, []float64{0.03, 0, 0, 0.03})
	if _, err := fitFrom(b, m2, p2, cfg, run.Control{MaxIter: 5, CheckpointPath: ck, Resume: true}); !errors.Is(err, run.ErrCheckpoint) {
		t.Errorf("checkpoint of d = 3 into d = 2: %v, want ErrCheckpoint", err)
	}
}
