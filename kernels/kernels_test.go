package kernels

import (
	"strings"
	"testing"
)

// TestSources checks that every listed module reads back with a kernel in it and that an unknown one is an error.
func TestSources(t *testing.T) {
	mods := Modules()
	if len(mods) < 8 {
		t.Fatalf("%d modules: %v", len(mods), mods)
	}
	for _, m := range mods {
		src, err := Source(m)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(src, `extern "C"`) {
			t.Errorf("%s.cu declares no kernel", m)
		}
	}
	if _, err := Source("nope"); err == nil {
		t.Error("Source of an unknown module: no error")
	}
}
