// Package datatest gives tests the data files of the shared data folder (datasets.Path): a test without its file is
// skipped, except under CI=true, where it fails, so that CI cannot pass by skipping the paper reproductions.
package datatest

import (
	"os"
	"testing"

	"github.com/geovb/geovb/datasets"
)

// Require returns the path of a data file for a test. Without the file the test is skipped with a message, except
// when CI=true, where it fails: CI must not pass by skipping the paper reproductions.
func Require(t testing.TB, elem ...string) string {
	t.Helper()
	p, err := datasets.Path(elem...)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("data file missing under CI: %v", err)
		}
		t.Skipf("data file missing, test skipped: %v", err)
	}
	return p
}
