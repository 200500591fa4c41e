package lrvga

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// Source streams observations. Next returns the next (x_t, y_t), or io.EOF after the last one. The filter reads
// x during the call only and never asks for an observation twice (the paper's single pass over the data).
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

// Run consumes the source one observation at a time under ctx and ctl until it ends (io.EOF, StopReason
// Converged), the context is cancelled, the filter has consumed ctl.MaxIter observations in all (counting those
// before a resume), or an update fails (the state is then that before the failing observation, and Result.Err says
// why). Each iteration reports a run.Record with the step count in Iter and "clamped" in Extra; ctl.CheckpointEvery
// saves a checkpoint (SaveCheckpoint) at ctl.CheckpointPath every so many observations. With ctl.Resume the filter
// first restores the state saved at ctl.CheckpointPath and continues from it bit for bit: the filter must have been
// built with the Config of the filter that saved it (its Model aside), or the error wraps run.ErrCheckpoint and
// names the setting that differs; the source must then stand at the checkpoint's step (T).
func (f *Filter) Run(ctx context.Context, ctl run.Control, src Source) (run.Result, error) {
	ctl = ctl.WithContext(ctx)
	if err := ctl.Validate(); err != nil {
		return run.Result{Reason: run.Failed, Err: err}, err
	}
	if ctl.Resume {
		st, err := loadCheckpoint(ctl.CheckpointPath, f.cfg)
		if err == nil {
			err = f.restore(st)
		}
		if err != nil {
			return run.Result{Reason: run.Failed, Err: err}, err
		}
	}
	return runStream(ctl, src, f.t, f.Update, func() int { return f.clamped }, f.SaveCheckpoint)
}

// runStream is the loop of Run for a filter at step t0 with the given update, clamp count and checkpoint writer.
func runStream(ctl run.Control, src Source, t0 int, update func(x []float64, y float64) error, clamped func() int,
	save func(path string) error) (run.Result, error) {
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

// loadCheckpoint reads the checkpoint at path and checks that it was saved by a filter of the configuration cfg.
func loadCheckpoint(path string, cfg Config) (Checkpoint, error) {
	var st Checkpoint
	if err := run.LoadCheckpoint(path, checkpointMethod, checkpointVersion, &st); err != nil {
		return st, err
	}
	if diff := configDiff(st.Cfg, cfg); diff != "" {
		return st, fmt.Errorf("lrvga: checkpoint %s is for another configuration: %s: %w", path, diff, run.ErrCheckpoint)
	}
	return st, nil
}

// configDiff returns "" when the settings saved and here agree (Model aside: a checkpoint does not hold it), else
// the first that differs.
func configDiff(saved, here Config) string {
	sv, hv := reflect.ValueOf(saved), reflect.ValueOf(here)
	for i := 0; i < sv.NumField(); i++ {
		name := sv.Type().Field(i).Name
		if name == "Model" {
			continue
		}
		a, b := sv.Field(i).Interface(), hv.Field(i).Interface()
		if x, ok := a.([]float64); ok {
			if !slices.Equal(x, b.([]float64)) {
				return name + " differs"
			}
			continue
		}
		if !reflect.DeepEqual(a, b) {
			return fmt.Sprintf("%s is %v in the checkpoint, %v in this filter", name, a, b)
		}
	}
	return ""
}

// checkState checks the arrays of a checkpoint for a filter of dimension d and rank p: lengths, finite values,
// ψ > 0, counts ≥ 0. Errors wrap run.ErrCheckpoint.
func checkState(st Checkpoint, d, p int) error {
	if len(st.Mu) != d || len(st.W) != d*p || len(st.Psi) != d || st.T < 0 || st.Clamped < 0 {
		return fmt.Errorf("lrvga: checkpoint arrays of lengths %d, %d, %d for d = %d, p = %d (t = %d): %w",
			len(st.Mu), len(st.W), len(st.Psi), d, p, st.T, run.ErrCheckpoint)
	}
	for _, a := range []struct {
		name string
		v    []float64
	}{{"mu", st.Mu}, {"W", st.W}, {"psi", st.Psi}} {
		for i, v := range a.v {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("lrvga: checkpoint %s[%d] = %v is not finite: %w", a.name, i, v, run.ErrCheckpoint)
			}
			if a.name == "psi" && !(v > 0) {
				return fmt.Errorf("lrvga: checkpoint psi[%d] = %v, want > 0: %w", i, v, run.ErrCheckpoint)
			}
		}
	}
	return nil
}

// restore puts the state of st (checked first: a bad checkpoint leaves the filter as it was) into the filter.
func (f *Filter) restore(st Checkpoint) error {
	if err := checkState(st, f.cfg.D, f.cfg.P); err != nil {
		return err
	}
	for _, u := range []struct {
		dst *tensor.Tensor
		src []float64
	}{{f.cur.mu, st.Mu}, {f.cur.w, st.W}, {f.cur.psi, st.Psi}} {
		h, _ := tensor.FromSlice(append([]float64(nil), u.src...), 1, u.dst.Rows(), u.dst.Cols())
		if err := f.b.Upload(u.dst, h); err != nil {
			return err
		}
	}
	f.t, f.draws, f.clamped = st.T, st.Draws, st.Clamped
	return f.factor()
}

// FromState rebuilds a filter from a checkpoint; model is the Model of the nonlinear schemes (nil otherwise).
func FromState(b backend.Backend, st Checkpoint, model Model) (*Filter, error) {
	cfg := st.Cfg
	cfg.Model = model
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := checkState(st, cfg.D, cfg.P); err != nil {
		return nil, err
	}
	f := &Filter{cfg: cfg, b: b, host: tensor.NewHost(1, 1, 1)}
	if err := f.alloc(); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.restore(st); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
