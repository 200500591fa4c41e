package mgvbcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geovb/geovb/algos/mgvb"
)

func TestDraws(t *testing.T) {
	for name, want := range map[string]mgvb.Draws{"prng": mgvb.PseudoRandom, "rqmc": mgvb.RQMC} {
		if got, err := Draws(name); err != nil || got != want {
			t.Errorf("Draws(%q) = %v, %v; want %v", name, got, err, want)
		}
	}
	if _, err := Draws("sobol"); err == nil || !strings.Contains(err.Error(), `"sobol"`) {
		t.Errorf("unknown draws: error %v, want one naming the value", err)
	}
}

// An output path in a missing folder is reported before the run, naming the path; a writable one leaves no file.
func TestCheckOutputs(t *testing.T) {
	dir := t.TempDir()
	if err := CheckOutputs("", filepath.Join(dir, "a.svg"), filepath.Join(dir, "a.csv")); err != nil {
		t.Fatalf("writable paths refused: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("CheckOutputs left %d files", len(ents))
	}
	bad := filepath.Join(dir, "missing", "out.svg")
	if err := CheckOutputs(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("missing folder: error %v, want one naming %s", err, bad)
	}
}

// WriteTrace writes the whole trace under its name and nothing else; a failure names the file and leaves nothing.
func TestWriteTrace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.csv")
	s := []Series{{Name: "m", LB: []float64{1, 2}, Smoothed: []float64{1, 1.5}}}
	if err := WriteTrace(path, s); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "iter,method,lb,smoothed\n1,m,1,1\n2,m,2,1.5\n" {
		t.Fatalf("trace %q, %v", b, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("%d files in the folder, want the trace only", len(ents))
	}
	// A folder in the way: the rename fails and the temporary file goes.
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteTrace(sub, s); err == nil || !strings.Contains(err.Error(), sub) {
		t.Fatalf("folder as path: error %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Fatalf("%d entries after a failed write, want 2", len(ents))
	}
}
