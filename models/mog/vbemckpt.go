package mog

import (
	"errors"
	"fmt"

	"github.com/geovb/geovb/algos/run"
)

// VBEMSettings are the stopping rule of VBEM and VBEMBatch (their resumption is the run.Control's Resume).
type VBEMSettings struct {
	// Tol and Patience: a run stops when |ΔF| < Tol for Patience consecutive iterations (0: 2).
	Tol      float64
	Patience int
	// With UseTarget, VBEM also stops once F ≤ Target (VBEMBatch has no target).
	Target    float64
	UseTarget bool
}

func (s VBEMSettings) check() error {
	switch {
	case !(s.Tol >= 0):
		return run.ConfigErrorf("mog", "Tol", "%v, want ≥ 0", s.Tol)
	case s.Patience < 0:
		return run.ConfigErrorf("mog", "Patience", "%d < 0", s.Patience)
	}
	return nil
}

func (s VBEMSettings) patience() int {
	if s.Patience == 0 {
		return 2
	}
	return s.Patience
}

const (
	vbemCheckpointMethod      = "mog-vbem"
	vbemBatchCheckpointMethod = "mog-vbem-batch"
	vbemCheckpointVersion     = 1
)

// vbemRun is the state of one VB-EM run after a whole iteration: its point (log r, m), the EM parameters its last
// M-step left (VBEMBatch only: it evaluates the next F with them, where VBEM forms them again), F of that iteration,
// the count of calm iterations, the iterations done and the stop reason (Running while unfinished).
type vbemRun struct {
	LogR, Mu        []float64
	Alpha, Beta, Nu []float64
	W               []float64
	FPrev           float64
	Calm, Iters     int
	Reason          run.StopReason
}

// vbemCheckpoint is the file of VBEM (one run) and VBEMBatch (one per run, in the order of the starting points).
type vbemCheckpoint struct {
	N, K, D int
	Runs    []vbemRun
}

// loadVBEM reads a checkpoint of method (vbemCheckpointMethod or vbemBatchCheckpointMethod) from path for the given
// number of runs and shape, with the EM parameters if withEM. A missing or unreadable file, or one for other shapes
// or with an inconsistent run, is an error wrapping run.ErrCheckpoint.
func loadVBEM(path, method string, runs, N, K, D int, withEM bool) (*vbemCheckpoint, error) {
	var c vbemCheckpoint
	if err := run.LoadCheckpoint(path, method, vbemCheckpointVersion, &c); err != nil {
		if !errors.Is(err, run.ErrCheckpoint) {
			err = fmt.Errorf("mog: resume: %w: %w", err, run.ErrCheckpoint)
		}
		return nil, err
	}
	ok := c.N == N && c.K == K && c.D == D && len(c.Runs) == runs
	for i := 0; ok && i < len(c.Runs); i++ {
		r := c.Runs[i]
		ok = len(r.LogR) == N*K && len(r.Mu) == K*D && run.Finite(r.LogR...) && run.Finite(r.Mu...) &&
			run.Finite(r.FPrev) && r.Calm >= 0 && r.Iters >= 0
		switch r.Reason {
		case run.Running:
		case run.Converged, run.MaxIter, run.NotFinite:
			ok = ok && withEM // VBEM saves only unfinished runs
		default:
			ok = false
		}
		if withEM {
			// A run stopped NotFinite may keep a W that is not finite; it is only reported.
			ok = ok && len(r.Alpha) == K && len(r.Beta) == K && len(r.Nu) == K && len(r.W) == K*D*D &&
				(r.Reason != run.Running || run.Finite(r.Alpha...) && run.Finite(r.Beta...) && run.Finite(r.Nu...) &&
					run.Finite(r.W...))
		}
	}
	if !ok {
		return nil, fmt.Errorf("mog: %s: a checkpoint of %d runs with N, K, D = %d, %d, %d, want %d runs with %d, %d, "+
			"%d (or a run's state is inconsistent): %w", path, len(c.Runs), c.N, c.K, c.D, runs, N, K, D,
			run.ErrCheckpoint)
	}
	return &c, nil
}
