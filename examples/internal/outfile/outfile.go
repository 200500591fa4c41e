// Package outfile is how the examples write their outputs: checked before a long run starts, and written whole or
// not at all.
package outfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Check reports the first path that names a folder or whose folder is missing or not writable ("" and "-", meaning
// no file or standard output, are skipped), so that a long run does not end without its output.
func Check(paths ...string) error {
	for _, p := range paths {
		if p == "" || p == "-" {
			continue
		}
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return fmt.Errorf("cannot write %s: it is a folder", p)
		}
		f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".*.tmp")
		if err != nil {
			return fmt.Errorf("cannot write %s: %w", p, err)
		}
		f.Close()
		os.Remove(f.Name())
	}
	return nil
}

// Write writes path through write: into a temporary file in the same folder, synced and renamed over path, so that
// path holds either all of the new content or what it held before. Errors name path.
func Write(path string, write func(io.Writer) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("writing %s: %w", path, err)
		}
	}()
	if err = write(tmp); err != nil {
		return err
	}
	if err = tmp.Chmod(0o644); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
