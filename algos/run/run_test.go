package run

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoopStops(t *testing.T) {
	// Cap from the method's default, then from Control.
	var mem Memory
	l := Control{Recorder: &mem, Every: 3}.Start(10, 0)
	n := 0
	for l.Next() {
		l.Report(Record{Objective: float64(n), GradNorm: math.NaN(), Step: 0.1})
		n++
	}
	res := l.Result()
	if res.Reason != MaxIter || res.Iters != 10 || n != 10 {
		t.Fatalf("default cap: reason %v iters %d ran %d", res.Reason, res.Iters, n)
	}
	// Records 0, 3, 6, 9 (every third), the last one (9) only once.
	if len(mem.Records) != 4 || mem.Records[3].Iter != 9 || mem.Records[1].Objective != 3 {
		t.Fatalf("records %+v", mem.Records)
	}
	mem = Memory{}
	l = Control{MaxIter: 5, Recorder: &mem, Every: 3}.Start(10, 0)
	for l.Next() {
		l.Report(Record{})
	}
	if res := l.Result(); res.Iters != 5 || len(mem.Records) != 3 || mem.Records[1].Iter != 3 || mem.Records[2].Iter != 4 {
		t.Fatalf("MaxIter 5, every 3: iters %d, records %+v", res.Iters, mem.Records)
	}

	// Cancellation is seen before the next iteration.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l = Control{Ctx: ctx}.Start(0, 0)
	for l.Next() {
		l.Report(Record{})
		if l.Iter() == 7 {
			cancel()
		}
	}
	res = l.Result()
	if res.Reason != Cancelled || res.Iters != 7 || !errors.Is(res.Err, context.Canceled) {
		t.Fatalf("cancel: %+v", res)
	}

	// Finish and Fail; the first reason wins.
	l = Control{}.Start(100, 0)
	for l.Next() {
		l.Report(Record{})
		if l.Iter() == 3 {
			l.Finish(Converged)
			l.Fail(errors.New("ignored"))
		}
	}
	if res := l.Result(); res.Reason != Converged || res.Iters != 3 || res.Err != nil {
		t.Fatalf("finish: %+v", res)
	}
	boom := errors.New("boom")
	l = Control{}.Start(100, 0)
	for l.Next() {
		l.Fail(boom)
	}
	if res := l.Result(); res.Reason != Failed || !errors.Is(res.Err, boom) || res.Iters != 0 {
		t.Fatalf("fail: %+v", res)
	}

	// A resumed run counts from the checkpoint's iteration.
	l = Control{MaxIter: 10}.Start(0, 8)
	for l.Next() {
		l.Report(Record{})
	}
	if res := l.Result(); res.Iters != 10 {
		t.Fatalf("resume from 8 to 10: %d iterations", res.Iters)
	}
	if Finite(1, math.Inf(1)) || Finite(math.NaN()) || !Finite(0, -1e300) {
		t.Fatalf("Finite wrong")
	}
	if s, _ := Converged.MarshalText(); string(s) != "converged" {
		t.Fatalf("MarshalText %q", s)
	}
}

func TestCheckpointDue(t *testing.T) {
	l := Control{CheckpointEvery: 4, CheckpointPath: "x"}.Start(10, 0)
	var due []int
	for l.Next() {
		l.Report(Record{})
		if l.CheckpointDue() {
			due = append(due, l.Iter())
		}
	}
	if len(due) != 2 || due[0] != 4 || due[1] != 8 {
		t.Fatalf("checkpoints after %v, want [4 8]", due)
	}
	// A run that converges at iteration 8 saves no checkpoint there.
	l = Control{CheckpointEvery: 4, CheckpointPath: "x"}.Start(10, 0)
	due = nil
	for l.Next() {
		l.Report(Record{})
		if l.Iter() == 8 {
			l.Finish(Converged)
		}
		if l.CheckpointDue() {
			due = append(due, l.Iter())
		}
	}
	if len(due) != 1 || due[0] != 4 {
		t.Fatalf("checkpoints after %v, want [4] (none at the converged iteration 8)", due)
	}
	for _, c := range []Control{{MaxIter: -1}, {Every: -2}, {CheckpointEvery: -1}, {CheckpointEvery: 3}, {Resume: true}} {
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("Validate(%+v) = %v, want ErrConfig", c, err)
		}
	}
	if err := (Control{Resume: true, CheckpointPath: "x"}).Validate(); err != nil {
		t.Errorf("Resume with a path: %v", err)
	}
}

func TestSmoother(t *testing.T) {
	// Window 3, burn-in 4, patience 2: hand-computed sequence.
	s := Smoother{Window: 3, Patience: 2, BurnIn: 4}
	in := []float64{1, 2, 3, 4, 5, 6, 5, 4, 3, 2}
	type out struct {
		sm            float64
		improved, stp bool
	}
	want := []out{
		{math.NaN(), false, false}, {math.NaN(), false, false}, {2, false, false}, {3, false, false}, // burn-in
		{4, true, false}, {5, true, false}, {16.0 / 3, true, false}, {5, false, false}, {4, false, false}, {3, false, true},
	}
	for i, v := range in {
		sm, imp, stop := s.Add(v)
		w := want[i]
		if !(sm == w.sm || math.IsNaN(sm) && math.IsNaN(w.sm)) || imp != w.improved || stop != w.stp {
			t.Fatalf("step %d: (%v, %v, %v), want (%v, %v, %v)", i, sm, imp, stop, w.sm, w.improved, w.stp)
		}
	}
	if b, ok := s.Best(); !ok || b != 16.0/3 {
		t.Fatalf("best %v %v", b, ok)
	}
	// Save and restore continue identically.
	a := Smoother{Window: 4, Patience: 3}
	for i := 0; i < 9; i++ {
		a.Add(math.Sin(float64(i)))
	}
	var b Smoother
	b = Smoother{Window: 4, Patience: 3}
	b.Restore(a.Save())
	for i := 9; i < 30; i++ {
		x := math.Sin(float64(i))
		s1, i1, t1 := a.Add(x)
		s2, i2, t2 := b.Add(x)
		if s1 != s2 || i1 != i2 || t1 != t2 {
			t.Fatalf("restored smoother differs at %d", i)
		}
	}
}

type testState struct {
	Iter int
	Mu   []float64
	Seed uint64
}

func TestCheckpointRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "fit.ckpt")
	in := testState{Iter: 42, Mu: []float64{1.0 / 3, -0.0, math.SmallestNonzeroFloat64, math.MaxFloat64}, Seed: 7}
	if err := SaveCheckpoint(path, "test", 1, in); err != nil {
		t.Fatal(err)
	}
	var out testState
	if err := LoadCheckpoint(path, "test", 1, &out); err != nil {
		t.Fatal(err)
	}
	for i := range in.Mu {
		if math.Float64bits(in.Mu[i]) != math.Float64bits(out.Mu[i]) {
			t.Fatalf("value %d not bit-identical: %v vs %v", i, in.Mu[i], out.Mu[i])
		}
	}
	if out.Iter != 42 || out.Seed != 7 {
		t.Fatalf("round trip %+v", out)
	}
	// Wrong method or version, damaged and truncated files: ErrCheckpoint naming the file.
	if err := LoadCheckpoint(path, "other", 1, &out); !errors.Is(err, ErrCheckpoint) {
		t.Errorf("other method: %v", err)
	}
	if err := LoadCheckpoint(path, "test", 2, &out); !errors.Is(err, ErrCheckpoint) {
		t.Errorf("other version: %v", err)
	}
	data, _ := os.ReadFile(path)
	for _, bad := range [][]byte{data[:len(data)-5], append([]byte("x"), data...), data[:len(magic)+3]} {
		err := DecodeCheckpoint("bad.ckpt", bad, "test", 1, &out)
		if !errors.Is(err, ErrCheckpoint) || !contains(err.Error(), "bad.ckpt") {
			t.Errorf("damaged file: %v", err)
		}
	}
	if err := LoadCheckpoint(filepath.Join(dir, "missing"), "test", 1, &out); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	// No temporary files are left behind.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("files in the checkpoint folder: %v", entries)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// FuzzDecodeCheckpoint: any bytes give a state or an error wrapping ErrCheckpoint, never a panic.
func FuzzDecodeCheckpoint(f *testing.F) {
	dir := f.TempDir()
	path := filepath.Join(dir, "seed.ckpt")
	if err := SaveCheckpoint(path, "test", 1, testState{Iter: 3, Mu: []float64{1, 2}}); err != nil {
		f.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	f.Add(good)
	f.Add([]byte(magic))
	f.Add([]byte("not a checkpoint"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var st testState
		if err := DecodeCheckpoint("fuzz.ckpt", data, "test", 1, &st); err != nil && !errors.Is(err, ErrCheckpoint) {
			t.Fatalf("error %v does not wrap ErrCheckpoint", err)
		}
	})
}

// TestRecordRunJSON: a record's run index is written only when it is not 0, so that the progress lines of methods
// with one run are unchanged.
func TestRecordRunJSON(t *testing.T) {
	for _, c := range []struct {
		run  int
		want string // "" for no run field
	}{{0, ""}, {3, `"run":3,`}} {
		b, err := json.Marshal(Record{Run: c.run, Iter: 1})
		if err != nil {
			t.Fatal(err)
		}
		if has := strings.Contains(string(b), `"run"`); has != (c.want != "") || !strings.Contains(string(b), c.want) {
			t.Errorf("Run %d: %s, want %q", c.run, b, c.want)
		}
	}
}
