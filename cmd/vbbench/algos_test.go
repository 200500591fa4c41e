package main

import (
	"errors"
	"math"
	"testing"
	"time"

	algorun "github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/models/nnet"
)

func openCPU(t *testing.T) backend.Backend {
	t.Helper()
	b, err := backend.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestIterTimer: the recorder adds up the iterations from its first counted index on, a reset clears it, and
// fitTimed rejects a fit that timed another number of iterations than asked (a fit that stopped early).
func TestIterTimer(t *testing.T) {
	tm := &iterTimer{from: 1}
	if !math.IsNaN(tm.seconds()) {
		t.Errorf("no iterations: %v s, want NaN", tm.seconds())
	}
	feed := func(n int) func() error {
		return func() error {
			for i := range n {
				tm.Record(algorun.Record{Iter: i, IterTime: time.Duration(i+1) * time.Millisecond})
			}
			return nil
		}
	}
	if err := tm.fitTimed(3, feed(4)); err != nil {
		t.Fatal(err)
	}
	// Iterations 1, 2, 3 took 2, 3, 4 ms; iteration 0 (1 ms) is not counted.
	if got := tm.seconds(); math.Abs(got-3e-3) > 1e-12 {
		t.Errorf("mean %v s, want 3e-3", got)
	}
	if err := tm.fitTimed(3, feed(3)); err == nil {
		t.Error("a fit with two counted iterations of three passed")
	}
	boom := errors.New("boom")
	if err := tm.fitTimed(3, func() error { return boom }); !errors.Is(err, boom) {
		t.Errorf("fit error %v, want %v", err, boom)
	}
}

// TestSampleSelfTimed: for an instance that times itself, the samples are its own times, not the clock around
// the call (which here also sleeps).
func TestSampleSelfTimed(t *testing.T) {
	b := openCPU(t)
	const own = 42e-6
	calls := 0
	in := &instance{nbuf: 1, be: b, run: func(int) error {
		calls++
		time.Sleep(time.Millisecond)
		return nil
	}, selfTimed: func() float64 { return own }}
	tm := timingQuick
	tm.reps = 3
	tm.budget = time.Hour // so that a slow first call on a loaded machine never skips the second warm-up call
	st, err := sample(b, in, tm, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if st.Median != own || st.Min != own || st.Max != own || st.Spread != 0 {
		t.Errorf("stats %+v, want every sample %v s", st, own)
	}
	if want := 2 + st.Reps*st.Inner; calls != want {
		t.Errorf("%d calls, want %d (two warm-up, %d×%d sampled)", calls, want, st.Reps, st.Inner)
	}
}

// TestAlgoPerIteration: the methods timed per iteration (MGVB, NNVB, RCG) report the mean of their timed
// iterations, which leaves out the fit's start and end: that many iterations take less than the whole call.
func TestAlgoPerIteration(t *testing.T) {
	b := openCPU(t)
	for _, c := range []struct {
		name  string
		iters int // timed iterations per call
	}{{"algo.mgvb", mgvbIters}, {"algo.nnvb", nnvbIters}, {"algo.rcg", rcgIters - 1}} {
		var w *workload
		for _, x := range workloads {
			if x.name == c.name {
				w = x
			}
		}
		if w == nil {
			t.Fatalf("no workload %s", c.name)
		}
		d := w.sizes["quick"]
		in, err := w.setup(b, d, d, false, 1, &filler{b: b, seed: 3})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if in.selfTimed == nil {
			t.Errorf("%s is not timed per iteration", c.name)
			in.close()
			continue
		}
		t0 := time.Now()
		err = in.run(0)
		wall := time.Since(t0).Seconds()
		per := in.selfTimed()
		in.close()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !(per > 0) || !(float64(c.iters)*per < wall) {
			t.Errorf("%s: %v s per iteration, %d iterations against %v s for the call", c.name, per, c.iters, wall)
		}
	}
}

// TestNNVBDim: the d of the algo.nnvb counts is the network's parameter count, and the synthetic labels have both
// classes.
func TestNNVBDim(t *testing.T) {
	for _, p := range []int{1, 8, 24} {
		x, y := nnetData(200, p, 5)
		m, err := nnet.New(x, y, 200, p)
		if err != nil {
			t.Fatal(err)
		}
		if m.Dim() != nnvbDim(p) {
			t.Errorf("p = %d: network has d = %d, counts use %d", p, m.Dim(), nnvbDim(p))
		}
		ones := 0.0
		for _, v := range y {
			ones += v
		}
		if ones < 20 || ones > 180 {
			t.Errorf("p = %d: %v of 200 labels are 1", p, ones)
		}
	}
}
