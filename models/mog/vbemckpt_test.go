package mog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/internal/testbackend"
)

// TestVBEMCheckpointResume stops VBEM after 37 iterations with a checkpoint every 5 (the last at 35), resumes from
// the file and checks that the run ends bit for bit where the uninterrupted run ends: iterations, stop reason, F,
// log r, m and the EM parameters; then again from one iteration short of convergence, where the calm count must
// carry over. A checkpoint of another shape, and Resume without a file, are errors wrapping run.ErrCheckpoint.
func TestVBEMCheckpointResume(t *testing.T) {
	m := testModel(t, 300, 5, 0.3, Options{}, 3)
	x0, err := Init(m, 1)
	if err != nil {
		t.Fatal(err)
	}
	s := VBEMSettings{Tol: 1e-9 * 300}
	path := filepath.Join(t.TempDir(), "vbem.ck")
	if _, err := VBEM(m, x0, s, run.Control{CheckpointPath: path, Resume: true}); !errors.Is(err, run.ErrCheckpoint) {
		t.Errorf("Resume without a checkpoint file: error %v, want run.ErrCheckpoint", err)
	}
	want, err := VBEM(m, x0, s, run.Control{CheckpointPath: path})
	if err != nil {
		t.Fatal(err)
	}
	if want.Reason != run.Converged || want.Iters < 60 {
		t.Fatalf("uninterrupted: %v after %d iterations, want convergence after more than 60", want.Reason, want.Iters)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a run without CheckpointEvery wrote %s (%v)", path, err)
	}
	if _, err := VBEM(m, x0, s, run.Control{MaxIter: 37, CheckpointEvery: 5, CheckpointPath: path}); err != nil {
		t.Fatal(err)
	}
	var first int
	got, err := VBEM(m, x0, s, run.Control{CheckpointPath: path, Resume: true,
		Recorder: run.Func(func(r run.Record) {
			if first == 0 {
				first = r.Iter + 1
			}
		})})
	if err != nil {
		t.Fatal(err)
	}
	if first != 36 {
		t.Errorf("resumed run's first record is of iteration %d, want 36 (the checkpoint holds 35)", first)
	}
	if got.Reason != want.Reason || got.Iters != want.Iters || got.F != want.F || !slices.Equal(got.LogR, want.LogR) ||
		!slices.Equal(got.Mu, want.Mu) || !slices.Equal(got.Post.W, want.Post.W) ||
		!slices.Equal(got.Post.Alpha, want.Post.Alpha) {
		t.Errorf("resumed: %v after %d iterations, F %.17g; uninterrupted %v after %d, F %.17g (or the state "+
			"differs)", got.Reason, got.Iters, got.F, want.Reason, want.Iters, want.F)
	}
	// One iteration short of convergence the calm count is 1: resumed, the run must stop after one more iteration.
	short := run.Control{MaxIter: want.Iters - 1, CheckpointEvery: 1, CheckpointPath: path}
	if _, err := VBEM(m, x0, s, short); err != nil {
		t.Fatal(err)
	}
	if got, err = VBEM(m, x0, s, run.Control{CheckpointPath: path, Resume: true}); err != nil {
		t.Fatal(err)
	}
	if got.Reason != want.Reason || got.Iters != want.Iters || got.F != want.F {
		t.Errorf("resumed one iteration short: %v after %d iterations, F %.17g; uninterrupted %v after %d, F %.17g",
			got.Reason, got.Iters, got.F, want.Reason, want.Iters, want.F)
	}
	other := testModel(t, 200, 5, 0.3, Options{}, 3)
	xo, err := Init(other, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = VBEM(other, xo, VBEMSettings{}, run.Control{CheckpointPath: path, Resume: true})
	if !errors.Is(err, run.ErrCheckpoint) {
		t.Errorf("checkpoint of N = 300 resumed with N = 200: error %v, want run.ErrCheckpoint", err)
	}
}

// TestVBEMBatchCheckpointResume interrupts VBEMBatch on the four distinct data sets of TestVBEMBatchMatchesHost by
// cancelling it, resumes from the last checkpoint in a fresh Batch and checks every run against the uninterrupted
// batch bit for bit: F at every iteration after the checkpoint, iterations, stop reason, final F, log r, m and the
// EM parameters. The cancelled pass is not saved. Two interruptions: 10 iterations after the first run converged,
// with a checkpoint every 7 passes, so that the file holds finished and unfinished runs (the finished ones must
// stay finished behind the others); and in the last run's last iteration, with a checkpoint every pass, so that the
// file holds that run one iteration short of convergence with its calm count at 1 (resumed, it must stop after one
// more iteration). A host VBEM checkpoint is not one of VBEMBatch.
func TestVBEMBatchCheckpointResume(t *testing.T) {
	be := testbackend.Open(t)
	ms := []*Model{testModel(t, 300, 5, 0.1, Options{}, 4), testModel(t, 300, 5, 0.2, Options{}, 5),
		testModel(t, 300, 5, 0.3, Options{PrintedW: true}, 6), testModel(t, 300, 5, 0.4, Options{}, 7)}
	newBatch := func() *Batch {
		bt, err := NewBatch(be, ms)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(bt.Close)
		return bt
	}
	bt := newBatch()
	xs := batchPoints(t, ms)
	s := VBEMSettings{Tol: 1e-9 * 300}
	dir := t.TempDir()
	wantF := make([][]float64, len(ms))
	want, err := VBEMBatch(bt, xs, s, run.Control{}, func(i int, F float64) { wantF[i] = append(wantF[i], F) })
	if err != nil {
		t.Fatal(err)
	}
	least, last := 0, 0
	for i, w := range want {
		if w.Iters < want[least].Iters {
			least = i
		}
		if w.Iters > want[last].Iters {
			last = i
		}
	}
	for _, c := range []struct {
		name   string
		every  int
		stopAt func(i int) int // cancel when run i reaches this iteration (0: never)
	}{
		{"after the first convergence", 7, func(int) int { return want[least].Iters + 10 }}, // a multiple of 7 between
		{"in the last iteration", 1, func(i int) int {
			if i == last {
				return want[last].Iters
			}
			return 0
		}},
	} {
		path := filepath.Join(dir, fmt.Sprintf("batch%d.ck", c.every))
		ctx, cancel := context.WithCancel(context.Background())
		counts := make([]int, len(ms))
		_, err = VBEMBatch(bt, xs, s, run.Control{Ctx: ctx, CheckpointEvery: c.every, CheckpointPath: path},
			func(i int, F float64) {
				if counts[i]++; counts[i] == c.stopAt(i) {
					cancel()
				}
			})
		cancel()
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: interrupted batch: %v", c.name, err)
		}
		ck, err := loadVBEM(path, vbemBatchCheckpointMethod, len(ms), 300, 5, 2, true)
		if err != nil || ck == nil {
			t.Fatalf("%s: reading the checkpoint: %v", c.name, err)
		}
		finished := 0
		for i, r := range ck.Runs {
			t.Logf("%s: checkpoint: run %d at iteration %d, %v, calm %d (uninterrupted: %d iterations)", c.name, i,
				r.Iters, r.Reason, r.Calm, want[i].Iters)
			if r.Reason != run.Running {
				finished++
			}
		}
		if finished == 0 || finished == len(ms) {
			t.Fatalf("%s: the checkpoint holds %d finished runs of %d; the test wants some of each", c.name, finished,
				len(ms))
		}
		fs := make([][]float64, len(ms))
		got, err := VBEMBatch(newBatch(), xs, s, run.Control{CheckpointPath: path, Resume: true},
			func(i int, F float64) { fs[i] = append(fs[i], F) })
		if err != nil {
			t.Fatal(err)
		}
		for i, g := range got {
			w := want[i]
			if !slices.Equal(fs[i], wantF[i][ck.Runs[i].Iters:]) {
				t.Errorf("%s: run %d: F after resuming at iteration %d differs from the uninterrupted run's (%d "+
					"records, want %d)", c.name, i, ck.Runs[i].Iters, len(fs[i]), w.Iters-ck.Runs[i].Iters)
			}
			if g.Reason != w.Reason || g.Iters != w.Iters || g.F != w.F || !slices.Equal(g.LogR, w.LogR) ||
				!slices.Equal(g.Mu, w.Mu) || !slices.Equal(g.Post.W, w.Post.W) || !slices.Equal(g.Post.Nu, w.Post.Nu) ||
				!slices.Equal(g.Post.Alpha, w.Post.Alpha) || !slices.Equal(g.Post.Beta, w.Post.Beta) {
				t.Errorf("%s: run %d resumed: %v after %d iterations, F %.17g; uninterrupted %v after %d, F %.17g (or "+
					"the state differs)", c.name, i, g.Reason, g.Iters, g.F, w.Reason, w.Iters, w.F)
			}
		}
	}
	host := filepath.Join(dir, "host.ck")
	if _, err := VBEM(ms[0], xs[0], s, run.Control{MaxIter: 2, CheckpointEvery: 1, CheckpointPath: host}); err != nil {
		t.Fatal(err)
	}
	if _, err := VBEMBatch(bt, xs, VBEMSettings{}, run.Control{CheckpointPath: host, Resume: true},
		nil); !errors.Is(err, run.ErrCheckpoint) {
		t.Errorf("VBEM's checkpoint given to VBEMBatch: error %v, want run.ErrCheckpoint", err)
	}
}

// FuzzVBEMCheckpoint: any file given to a resumed VBEM or VBEMBatch gives a checkpoint that fits the runs, or an
// error wrapping run.ErrCheckpoint (not a checkpoint, damaged, another method, another shape, an inconsistent run),
// never a panic.
func FuzzVBEMCheckpoint(f *testing.F) {
	m := testModel(f, 40, 3, 0.3, Options{}, 1)
	x0, err := Init(m, 0)
	if err != nil {
		f.Fatal(err)
	}
	bt, err := NewBatch(testbackend.Open(f), []*Model{m, m})
	if err != nil {
		f.Fatal(err)
	}
	defer bt.Close()
	dir := f.TempDir()
	host, batch := filepath.Join(dir, "host.ck"), filepath.Join(dir, "batch.ck")
	if _, err := VBEM(m, x0, VBEMSettings{}, run.Control{MaxIter: 3, CheckpointEvery: 1,
		CheckpointPath: host}); err != nil {
		f.Fatal(err)
	}
	if _, err := VBEMBatch(bt, [][]float64{x0, x0}, VBEMSettings{}, run.Control{MaxIter: 3, CheckpointEvery: 1,
		CheckpointPath: batch}, nil); err != nil {
		f.Fatal(err)
	}
	for _, p := range []string{host, batch} {
		good, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(good)
		f.Add(good[:len(good)/2])
	}
	f.Add([]byte("geovb-checkpoint v1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "fuzz.ck")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			method string
			runs   int
			withEM bool
		}{{vbemCheckpointMethod, 1, false}, {vbemBatchCheckpointMethod, 2, true}} {
			ck, err := loadVBEM(path, c.method, c.runs, m.N, m.K, m.D, c.withEM)
			switch {
			case err != nil:
				if !errors.Is(err, run.ErrCheckpoint) {
					t.Fatalf("%s: error %v does not wrap run.ErrCheckpoint", c.method, err)
				}
			case ck == nil:
				t.Fatalf("%s: no checkpoint and no error for an existing file", c.method)
			default:
				for _, r := range ck.Runs {
					if len(r.LogR) != m.N*m.K || len(r.Mu) != m.K*m.D || c.withEM && len(r.W) != m.K*m.D*m.D {
						t.Fatalf("%s: accepted a run of the wrong shape", c.method)
					}
				}
			}
		}
	})
}
