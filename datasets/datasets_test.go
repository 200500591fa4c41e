package datasets

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestParseError(t *testing.T) {
	err := Errorf("a.csv", 3, 7, "field %q is not a number", "x1")
	if !errors.Is(err, ErrFormat) || err.Error() != `a.csv:3:7: field "x1" is not a number` {
		t.Fatalf("%v", err)
	}
	if e := Errorf("b.txt", 2, 0, "3 fields, want 4"); e.Error() != "b.txt:2: 3 fields, want 4" {
		t.Fatalf("%v", e)
	}
}

func TestDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv(EnvVar, tmp)
	if d, err := Dir(); err != nil || d != tmp {
		t.Fatalf("Dir with %s set: %q, %v", EnvVar, d, err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "f.txt"), []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := Path("f.txt"); err != nil || p != filepath.Join(tmp, "f.txt") {
		t.Fatalf("Path: %q, %v", p, err)
	}
	if _, err := Path("missing.txt"); err == nil {
		t.Fatalf("Path of a missing file: no error")
	}
	t.Setenv(EnvVar, filepath.Join(tmp, "nope"))
	if _, err := Dir(); err == nil {
		t.Fatalf("Dir with %s pointing nowhere: no error", EnvVar)
	}
	t.Setenv(EnvVar, "")
	// From the repository, ../shared/data is found when it exists (it does beside a checkout with shared/).
	if d, err := Dir(); err == nil {
		if _, err := os.Stat(filepath.Join(d, "README.md")); err != nil {
			t.Errorf("data folder %s has no README.md", d)
		}
	}
}
