package repro

import (
	"flag"
	"testing"
)

func TestRequire(t *testing.T) {
	ran := false
	t.Run("gated", func(t *testing.T) {
		t.Setenv(EnvVar, "")
		f := flag.Lookup("test.run")
		old := f.Value.String()
		defer f.Value.Set(old)
		if err := f.Value.Set("Nothing"); err != nil {
			t.Fatal(err)
		}
		Require(t)
		ran = true
	})
	if ran && !testing.Short() {
		t.Fatalf("Require did not skip without -run Repro or %s", EnvVar)
	}
	ran = false
	t.Run("forced", func(t *testing.T) {
		t.Setenv(EnvVar, "1")
		Require(t)
		ran = true
	})
	if !ran && !testing.Short() {
		t.Fatalf("Require skipped with %s=1", EnvVar)
	}
}
