// Package datasets reads the data formats the papers' experiments use. Nothing here ships data: the files live in
// the shared data folder (see Dir). Every reader reports a malformed file as a *ParseError naming the file, line
// and column, and has a fuzz target.
package datasets

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrFormat is the cause of every error about a file's contents.
var ErrFormat = errors.New("malformed data")

// ParseError locates a problem in a data file. Line and Column count from 1; Column 0 means the whole line.
type ParseError struct {
	File   string
	Line   int
	Column int
	Msg    string
}

func (e *ParseError) Error() string {
	if e.Column > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// Unwrap makes errors.Is(err, ErrFormat) hold.
func (e *ParseError) Unwrap() error { return ErrFormat }

// Errorf returns a *ParseError.
func Errorf(file string, line, col int, format string, args ...any) error {
	return &ParseError{File: file, Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
}

// EnvVar names the environment variable that overrides the data folder.
const EnvVar = "GEOVB_DATA"

// Dir returns the shared data folder: $GEOVB_DATA if set, else ../shared/data beside the repository root, found by
// walking up from the working directory to the folder holding go.mod. It returns an error when neither exists.
func Dir() (string, error) {
	if d := os.Getenv(EnvVar); d != "" {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return "", fmt.Errorf("datasets: %s=%s is not a folder", EnvVar, d)
		}
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			data := filepath.Join(d, "..", "shared", "data")
			if st, err := os.Stat(data); err == nil && st.IsDir() {
				return data, nil
			}
			return "", fmt.Errorf("datasets: no data folder at %s (set %s)", data, EnvVar)
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("datasets: no go.mod above %s to find ../shared/data from (set %s)", wd, EnvVar)
		}
	}
}

// Path returns the path of a file in the data folder (elements joined with the folder).
func Path(elem ...string) (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(append([]string{d}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("datasets: %w", err)
	}
	return p, nil
}
