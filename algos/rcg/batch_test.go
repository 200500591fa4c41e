package rcg

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/internal/testbackend"
)

// FuzzBatchCheckpoint: any file given to a resumed MinimizeBatch gives a checkpoint that fits the batch, or an error
// wrapping run.ErrCheckpoint (not a checkpoint, damaged, another method or shape), never a panic.
func FuzzBatchCheckpoint(f *testing.F) {
	be := testbackend.Open(f)
	a, v := []float64{2, 1, 3, 0.5}, []float64{0.25, 1.5, 0.1, 1}
	xs := [][]float64{{1, -2, 0.5, 3}, {1, 1, 1, 1}, {-1, 0, 2, 0.5}}
	bt := &diagQuadBatch{be: be, qs: []diagQuad{{a, v}, {a, v}, {a, v}}, dim: 4}
	s := Settings{Tol: 1e-6, RestartEvery: SqrtN}
	seed := filepath.Join(f.TempDir(), "seed.ck")
	if _, err := MinimizeBatch(context.Background(), bt, xs, withControl(s, run.Control{MaxIter: 3, CheckpointEvery: 1,
		CheckpointPath: seed})); err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(seed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte("geovb-checkpoint v1\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "fuzz.ck")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := loadBatch(path, s, len(xs), bt.Dim())
		switch {
		case err != nil:
			if !errors.Is(err, run.ErrCheckpoint) {
				t.Fatalf("error %v does not wrap run.ErrCheckpoint", err)
			}
		case len(c.Runs) != len(xs) || len(c.X[len(xs)-1]) != bt.Dim():
			t.Fatal("loaded a checkpoint that does not fit")
		}
	})
}
