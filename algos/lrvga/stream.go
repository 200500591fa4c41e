package lrvga

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// Source streams observations. Next returns the next (x_t, y_t), or io.EOF after the last one. The filter reads
// x during the call only and never asks for an observation twice (one pass, notes §2.11).
type Source interface {
	Next() (x []float64, y float64, err error)
}

// SliceSource streams the rows of X (N×d, row-major) with labels Y.
type SliceSource struct {
	X    []float64
	Y    []float64
	next int
}

// Next returns row next of X.
func (s *SliceSource) Next() ([]float64, float64, error) {
	if s.next >= len(s.Y) {
		return nil, 0, io.EOF
	}
	d := len(s.X) / len(s.Y)
	i := s.next
	s.next++
	return s.X[i*d : (i+1)*d], s.Y[i], nil
}

// Run consumes the source one observation at a time until it ends (io.EOF, StopReason Converged), the context is
// cancelled, the filter has consumed ctl.MaxIter observations in all (counting those before a resume), or an update fails (the state is then that
// before the failing observation, and Result.Err says why). Each iteration reports a run.Record with the step
// count in Iter and "clamped" in Extra; ctl.CheckpointEvery saves a checkpoint (SaveCheckpoint) every so many
// observations. Progress is reported through ctl.Recorder (a run.Func is a callback).
func (f *Filter) Run(ctl run.Control, src Source) (run.Result, error) {
	return runStream(ctl, src, f.t, f.Update, func() int { return f.clamped }, f.SaveCheckpoint)
}

// runStream is the loop of Run for a filter at step t0 with the given update, clamp count and checkpoint writer.
func runStream(ctl run.Control, src Source, t0 int, update func(x []float64, y float64) error, clamped func() int,
	save func(path string) error) (run.Result, error) {
	if err := ctl.Validate(); err != nil {
		return run.Result{Reason: run.Failed, Err: err}, err
	}
	loop := ctl.Start(0, t0) // the loop counts observations from the filter's step: MaxIter is a total
	for loop.Next() {
		x, y, err := src.Next()
		if errors.Is(err, io.EOF) {
			loop.Finish(run.Converged)
			break
		}
		if err != nil {
			loop.Fail(err)
			break
		}
		if err := update(x, y); err != nil {
			loop.Fail(err)
			break
		}
		loop.Report(run.Record{Objective: math.NaN(), Smoothed: math.NaN(), GradNorm: math.NaN(), Step: math.NaN(),
			Extra: map[string]float64{"clamped": float64(clamped())}})
		if loop.CheckpointDue() {
			if err := save(ctl.CheckpointPath); err != nil {
				loop.Fail(err)
				break
			}
		}
	}
	res := loop.Result()
	return res, res.Err
}

// checkpointMethod and checkpointVersion identify the checkpoint format. Version 2 stores Config.Scheme as a
// Scheme (version 1 had a string there); files of version 1 are refused with run.ErrCheckpoint.
const (
	checkpointMethod  = "lrvga"
	checkpointVersion = 2
)

// Checkpoint is the saved state of a Filter: the configuration (without the Model), μ, W, ψ, the step count and
// the position of the random stream. Float64 values are stored exactly, so a resumed run continues bit for bit on
// the same backend.
type Checkpoint struct {
	Cfg            Config
	T              int
	Draws          uint64
	Clamped        int
	Mu, W, Psi     []float64
	BackendName    string
	BackendLibrary string
}

// State returns the filter's checkpoint.
func (f *Filter) State() (Checkpoint, error) {
	cfg := f.cfg
	cfg.Model = nil
	mu, err := f.MeanHost(nil)
	if err != nil {
		return Checkpoint{}, err
	}
	w, psi, err := f.Factors()
	if err != nil {
		return Checkpoint{}, err
	}
	info := f.b.Info()
	return Checkpoint{Cfg: cfg, T: f.t, Draws: f.draws, Clamped: f.clamped, Mu: mu, W: w, Psi: psi,
		BackendName: info.Name, BackendLibrary: info.Library}, nil
}

// SaveCheckpoint writes the filter's state to path atomically (run.SaveCheckpoint).
func (f *Filter) SaveCheckpoint(path string) error {
	st, err := f.State()
	if err != nil {
		return err
	}
	return run.SaveCheckpoint(path, checkpointMethod, checkpointVersion, st)
}

// Resume loads a checkpoint written by SaveCheckpoint and returns the filter it describes; model is the Model of
// the nonlinear schemes (nil otherwise).
func Resume(b backend.Backend, path string, model Model) (*Filter, error) {
	var st Checkpoint
	if err := run.LoadCheckpoint(path, checkpointMethod, checkpointVersion, &st); err != nil {
		return nil, err
	}
	return FromState(b, st, model)
}

// FromState rebuilds a filter from a checkpoint.
func FromState(b backend.Backend, st Checkpoint, model Model) (*Filter, error) {
	cfg := st.Cfg
	cfg.Model = model
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	d, p := cfg.D, cfg.P
	if len(st.Mu) != d || len(st.W) != d*p || len(st.Psi) != d || st.T < 0 {
		return nil, fmt.Errorf("lrvga: checkpoint arrays of lengths %d, %d, %d for d = %d, p = %d: %w",
			len(st.Mu), len(st.W), len(st.Psi), d, p, run.ErrCheckpoint)
	}
	f := &Filter{cfg: cfg, b: b, host: tensor.NewHost(1, 1, 1), t: st.T, draws: st.Draws, clamped: st.Clamped}
	if err := f.alloc(); err != nil {
		f.Close()
		return nil, err
	}
	for _, u := range []struct {
		dst  *tensor.Tensor
		src  []float64
		name string
	}{{f.cur.mu, st.Mu, "mu"}, {f.cur.w, st.W, "W"}, {f.cur.psi, st.Psi, "psi"}} {
		h, _ := tensor.FromSlice(append([]float64(nil), u.src...), 1, u.dst.Rows(), u.dst.Cols())
		if err := backend.UploadFinite(b, u.dst, h, u.name); err != nil {
			f.Close()
			return nil, err
		}
	}
	if err := f.factor(); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
