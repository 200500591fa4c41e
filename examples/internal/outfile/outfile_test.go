package outfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWrite: a successful write replaces the file whole; a failing writer, a missing folder and a folder as the
// target leave the old content (or no file) and no temporary file behind, with errors naming the path.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.csv")
	write := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	if err := Write(path, write("one\n")); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, write("two\n")); err != nil {
		t.Fatal(err)
	}
	fail := func(w io.Writer) error { io.WriteString(w, "half"); return errors.New("disk full") }
	if err := Write(path, fail); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("failing writer: %v", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "two\n" {
		t.Errorf("after a failed write the file holds %q (%v), want the previous content", b, err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v (%v), want 0644", st.Mode(), err)
	}
	for _, bad := range []string{filepath.Join(dir, "missing", "out.csv"), dir} {
		if err := Write(bad, write("x")); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: error %v, want one naming the path", bad, err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d entries left in the folder, want only out.csv", len(ents))
	}
}

// TestCheck: writable paths, "" and "-" pass and leave nothing behind; a missing folder and a path that is a folder
// are reported by name.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	if err := Check("", "-", filepath.Join(dir, "a.svg")); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("Check left %d files", len(ents))
	}
	bad := filepath.Join(dir, "missing", "a.svg")
	if err := Check(filepath.Join(dir, "b.svg"), bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("missing folder: %v", err)
	}
	if err := Check(dir); err == nil || !strings.Contains(err.Error(), "folder") {
		t.Errorf("a folder as the output: %v", err)
	}
}
