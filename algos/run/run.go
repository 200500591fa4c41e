// Package run is the run control every geovb method shares: a loop that honours a context and an iteration cap,
// a progress recorder (objective, gradient norm, step size, time per iteration), the reason a run stopped, the
// smoothed lower-bound stopping rule with burn-in and patience, and checkpoints that a run resumes from.
//
// A method's fit function drives a Loop:
//
//	loop := ctl.Start()
//	for loop.Next() {
//		… one iteration …
//		loop.Report(run.Record{Objective: lb, GradNorm: g, Step: eps})
//		if converged {
//			loop.Finish(run.Converged)
//		}
//	}
//	res := loop.Result() // why it stopped, iterations, time
package run

import (
	"context"
	"fmt"
	"math"
	"time"
)

// StopReason says why a run ended.
type StopReason int

// Stop reasons.
const (
	Running   StopReason = iota // not stopped yet
	Converged                   // the method's own convergence test passed
	MaxIter                     // the iteration cap was reached
	Patience                    // the smoothed objective stopped improving (see Smoother)
	Cancelled                   // the context was cancelled or its deadline passed
	NotFinite                   // the objective or a gradient became NaN or infinite
	Failed                      // an error ended the run (Result.Err says which)
)

var reasonNames = [...]string{"running", "converged", "max-iter", "patience", "cancelled", "not-finite", "failed"}

func (r StopReason) String() string {
	if r >= 0 && int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("StopReason(%d)", int(r))
}

// MarshalText writes the reason's name, so that JSON progress lines read "converged", not 1.
func (r StopReason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// Record is the progress of one iteration. Fields a method does not compute are NaN (Objective, Smoothed,
// GradNorm, Step) or empty.
type Record struct {
	// Run is the index of the run in a batch of runs, for methods that record each run separately (rcg's
	// MinimizeBatch); 0 otherwise.
	Run       int                `json:"run,omitempty"`
	Iter      int                `json:"iter"`
	Objective float64            `json:"objective"` // ELBO, lower bound or negative free energy (higher is better)
	Smoothed  float64            `json:"smoothed"`  // the smoothed objective of the stopping rule
	GradNorm  float64            `json:"grad_norm"`
	Step      float64            `json:"step"`
	IterTime  time.Duration      `json:"iter_ns"`  // time of this iteration
	Total     time.Duration      `json:"total_ns"` // time since the run (or the resumed run) started
	Extra     map[string]float64 `json:"extra,omitempty"`
}

// Recorder receives the records of a run.
type Recorder interface {
	Record(Record)
}

// Memory is a Recorder that keeps every record.
type Memory struct {
	Records []Record
}

// Record appends r.
func (m *Memory) Record(r Record) { m.Records = append(m.Records, r) }

// Func adapts a function to a Recorder (a progress callback).
type Func func(Record)

// Record calls f.
func (f Func) Record(r Record) { f(r) }

// Control is what a caller sets for a run; the zero value runs to the method's default iteration cap with no
// recording, no cancellation and no checkpoints.
type Control struct {
	// Ctx cancels the run; nil means context.Background(). A method whose entry point takes a context
	// (Fit(ctx, …)) uses that one instead.
	Ctx context.Context
	// MaxIter caps the iterations; 0 leaves the method's default.
	MaxIter int
	// Recorder receives a Record every Every iterations (default 1) and the last one.
	Recorder Recorder
	Every    int
	// CheckpointEvery asks the method to save a checkpoint every so many iterations (0: never).
	CheckpointEvery int
	// CheckpointPath is the file checkpoints are written to (atomically: a crash never leaves a partial file).
	CheckpointPath string
	// Resume continues the run from the checkpoint at CheckpointPath, bit for bit (the method's other settings
	// must be those of the run that wrote it). A missing or damaged file is an error.
	Resume bool
}

// WithContext returns c with Ctx set to ctx (when ctx is not nil): what a Fit(ctx, …) runs under.
func (c Control) WithContext(ctx context.Context) Control {
	if ctx != nil {
		c.Ctx = ctx
	}
	return c
}

// Validate reports settings that cannot work.
func (c Control) Validate() error {
	switch {
	case c.MaxIter < 0:
		return ConfigErrorf("run", "MaxIter", "%d < 0", c.MaxIter)
	case c.Every < 0:
		return ConfigErrorf("run", "Every", "%d < 0", c.Every)
	case c.CheckpointEvery < 0:
		return ConfigErrorf("run", "CheckpointEvery", "%d < 0", c.CheckpointEvery)
	case c.CheckpointEvery > 0 && c.CheckpointPath == "":
		return ConfigErrorf("run", "CheckpointPath", "CheckpointEvery set without a path")
	case c.Resume && c.CheckpointPath == "":
		return ConfigErrorf("run", "CheckpointPath", "Resume set without a path")
	}
	return nil
}

// Result says how a run ended.
type Result struct {
	Reason  StopReason    `json:"reason"`
	Iters   int           `json:"iters"`   // iterations completed, counting those before a resume
	Elapsed time.Duration `json:"elapsed"` // time of this (possibly resumed) run
	Err     error         `json:"-"`
	Last    Record        `json:"last"`
}

// Loop drives the iterations of one run.
type Loop struct {
	ctl       Control
	ctx       context.Context
	maxIter   int
	iter      int // iterations completed
	start     time.Time
	iterStart time.Time
	reason    StopReason
	err       error
	last      Record
	pending   bool // a record of the last iteration has not been sent
}

// Start begins a run with the method's default iteration cap defaultMax (used when Control.MaxIter is 0), from
// iteration done (0 for a fresh run, the checkpoint's count for a resumed one).
func (c Control) Start(defaultMax, done int) *Loop {
	ctx := c.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	m := c.MaxIter
	if m == 0 {
		m = defaultMax
	}
	now := time.Now()
	return &Loop{ctl: c, ctx: ctx, maxIter: m, iter: done, start: now, iterStart: now}
}

// Next reports whether another iteration should run. It stops the loop when a reason was set with Finish, the
// context is done, or the cap is reached.
func (l *Loop) Next() bool {
	if l.reason != Running {
		return false
	}
	if l.ctx.Err() != nil {
		l.reason = Cancelled
		l.err = l.ctx.Err()
		return false
	}
	if l.maxIter > 0 && l.iter >= l.maxIter {
		l.reason = MaxIter
		return false
	}
	l.iterStart = time.Now()
	return true
}

// Iter returns the number of iterations completed (the index of the current one while it runs).
func (l *Loop) Iter() int { return l.iter }

// Report closes the current iteration with its record (Iter, IterTime and Total are filled in). NaN in a record
// means "not computed"; a method that finds a non-finite value where it needs a finite one calls
// Finish(NotFinite) (see Finite).
func (l *Loop) Report(r Record) {
	now := time.Now()
	r.Iter = l.iter
	r.IterTime = now.Sub(l.iterStart)
	r.Total = now.Sub(l.start)
	l.iter++
	l.last = r
	l.pending = true
	every := max(l.ctl.Every, 1)
	if l.ctl.Recorder != nil && r.Iter%every == 0 {
		l.ctl.Recorder.Record(r)
		l.pending = false
	}
}

// Finite reports whether every value is neither NaN nor infinite.
func Finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// CheckpointDue reports whether the method should save a checkpoint now (after Report): every CheckpointEvery
// iterations, but not once Finish has ended the run, whose state a resumed run would take one iteration further (a
// resume from the checkpoint before retraces the run to its end).
func (l *Loop) CheckpointDue() bool {
	e := l.ctl.CheckpointEvery
	return e > 0 && l.iter > 0 && l.iter%e == 0 && l.reason == Running
}

// Finish stops the loop for reason (Converged, Patience, NotFinite, …) after the current iteration.
func (l *Loop) Finish(reason StopReason) {
	if l.reason == Running {
		l.reason = reason
	}
}

// Fail stops the loop with an error.
func (l *Loop) Fail(err error) {
	if l.reason == Running {
		l.reason = Failed
		l.err = err
	}
}

// Result returns how the run ended and sends the last record if the recorder has not seen it.
func (l *Loop) Result() Result {
	if l.pending && l.ctl.Recorder != nil {
		l.ctl.Recorder.Record(l.last)
		l.pending = false
	}
	reason := l.reason
	if reason == Running {
		reason = MaxIter
	}
	return Result{Reason: reason, Iters: l.iter, Elapsed: time.Since(l.start), Err: l.err, Last: l.last}
}
