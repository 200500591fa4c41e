package rcg

import (
	"fmt"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

const batchCheckpointMethod = "rcg-batch"
const batchCheckpointVersion = 1

// batchRunState is the host state of one run of MinimizeBatch in a checkpoint.
type batchRunState struct {
	GnPrev, AlphaPrev, FPrev           float64
	SinceReset, Calm, Iters            int
	HavePrev, Done                     bool
	Reason                             run.StopReason
	ConvergedBy                        Convergence
	FEvals, GEvals, Rejected, Restarts int
}

// batchCheckpoint is MinimizeBatch's state after a whole iteration of every unfinished run, by run (the order of
// x0, whatever slots the runs were in): what the next iteration needs besides what it recomputes (F, g and g̃ at x).
type batchCheckpoint struct {
	Method, Dim      int
	Runs             []batchRunState
	X, GtPrev, PPrev [][]float64
	ObjState         [][]float64 // BatchStateful's state by run; nil for an objective without one
	Mult             [][]float64 // Old's multipliers by run; nil for the other methods
	GPrev            [][]float64 // the previous gradients by run for Hestenes–Stiefel; nil for the other β
}

func (r *runState) save() batchRunState {
	return batchRunState{GnPrev: r.gnPrev, AlphaPrev: r.alphaPrev, FPrev: r.fPrev, SinceReset: r.sinceReset,
		Calm: r.calm, Iters: r.iters, HavePrev: r.havePrev, Done: r.res.Reason != run.Running, Reason: r.res.Reason,
		ConvergedBy: r.res.ConvergedBy, FEvals: r.res.FEvals, GEvals: r.res.GEvals, Rejected: r.res.Rejected,
		Restarts: r.res.Restarts}
}

func (r *runState) load(c batchRunState) {
	r.gnPrev, r.alphaPrev, r.fPrev, r.fLast = c.GnPrev, c.AlphaPrev, c.FPrev, c.FPrev
	r.sinceReset, r.calm, r.iters, r.havePrev = c.SinceReset, c.Calm, c.Iters, c.HavePrev
	r.res.FEvals, r.res.GEvals, r.res.Rejected, r.res.Restarts = c.FEvals, c.GEvals, c.Rejected, c.Restarts
}

// rowsByRun downloads t (B×1×dim) and returns its rows by run: slot i holds run st[i].id.
func rowsByRun(be backend.Backend, t *tensor.Tensor, st []*runState) ([][]float64, error) {
	h := tensor.NewHost(t.Batch(), 1, t.Cols())
	if err := be.Download(h, t); err != nil {
		return nil, err
	}
	rows := h.ItemRows()
	out := make([][]float64, len(st))
	for i, r := range st {
		out[r.id] = rows[i]
	}
	return out, nil
}

// saveBatch writes the checkpoint of MinimizeBatch's state to path (atomically, run.SaveCheckpoint).
func saveBatch(path string, e *batchEngine, s Settings, st []*runState, stf BatchStateful) error {
	be := e.be
	c := batchCheckpoint{Method: int(s.Method), Dim: e.x.Cols(), Runs: make([]batchRunState, len(st))}
	if stf != nil {
		c.ObjState = make([][]float64, len(st))
	}
	if s.Method == Old {
		c.Mult = make([][]float64, len(st))
	}
	for i, r := range st {
		c.Runs[r.id] = r.save()
		if stf != nil {
			c.ObjState[r.id] = stf.State(i)
		}
		if c.Mult != nil {
			c.Mult[r.id] = r.mult
		}
	}
	var err error
	if c.X, err = rowsByRun(be, e.x, st); err != nil {
		return err
	}
	if c.GtPrev, err = rowsByRun(be, e.gtPrev, st); err != nil {
		return err
	}
	if c.PPrev, err = rowsByRun(be, e.pPrev, st); err != nil {
		return err
	}
	if e.gPrev != nil {
		if c.GPrev, err = rowsByRun(be, e.gPrev, st); err != nil {
			return err
		}
	}
	return run.SaveCheckpoint(path, batchCheckpointMethod, batchCheckpointVersion, c)
}

// loadBatch reads a checkpoint of MinimizeBatch from path for a batch of B runs of length dim and method s.Method.
// A missing or unreadable file, or one that does not fit, is an error wrapping run.ErrCheckpoint.
func loadBatch(path string, s Settings, B, dim int) (*batchCheckpoint, error) {
	var c batchCheckpoint
	if err := loadCheckpoint(path, batchCheckpointMethod, batchCheckpointVersion, &c); err != nil {
		return nil, err
	}
	ok := c.Method == int(s.Method) && c.Dim == dim && len(c.Runs) == B && len(c.X) == B && len(c.GtPrev) == B &&
		len(c.PPrev) == B && (c.ObjState == nil || len(c.ObjState) == B) &&
		(s.Method == Old) == (c.Mult != nil) && (c.Mult == nil || len(c.Mult) == B) &&
		(s.Beta == HestenesStiefel) == (c.GPrev != nil) && (c.GPrev == nil || len(c.GPrev) == B)
	for i := 0; ok && i < B; i++ {
		r := c.Runs[i]
		ok = len(c.X[i]) == dim && len(c.GtPrev[i]) == dim && len(c.PPrev[i]) == dim &&
			(c.GPrev == nil || len(c.GPrev[i]) == dim) &&
			(c.Mult == nil || len(c.Mult[i]) == dim && finiteVec(c.Mult[i])) &&
			r.Done == (r.Reason != run.Running) && r.Iters >= 0 &&
			// A checkpoint written before ConvergedBy existed holds NotConverged for its converged runs.
			r.ConvergedBy >= NotConverged && r.ConvergedBy <= NoDecrease &&
			(r.Reason == run.Converged || r.ConvergedBy == NotConverged)
	}
	if !ok {
		return nil, fmt.Errorf("rcg: %s: a checkpoint of method %v with %d runs of length %d, want %v, %d runs "+
			"of length %d (or a run's state is inconsistent): %w", path, Method(c.Method), len(c.Runs), c.Dim, s.Method,
			B, dim, run.ErrCheckpoint)
	}
	return &c, nil
}

// uploadRows writes rows (one per run, run i in slot i) into t.
func uploadRows(be backend.Backend, t *tensor.Tensor, rows [][]float64) error {
	h, err := tensor.FromRows(rows, t.Cols())
	if err != nil {
		return err
	}
	return be.Upload(t, h)
}
