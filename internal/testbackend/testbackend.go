// Package testbackend opens the backend that tests of the methods and models run on: $GEOVB_BACKEND when set (so a
// GPU machine runs them on CUDA), else the CPU.
package testbackend

import (
	"os"
	"testing"

	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/all"
)

// Open returns the test backend, failing the test when it cannot start, and closes it when the test ends.
func Open(t testing.TB) backend.Backend {
	t.Helper()
	name := os.Getenv(backend.EnvVar)
	if name == "" {
		name = "cpu"
	}
	b, err := backend.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}
