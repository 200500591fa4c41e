package model_test

import (
	"testing"

	"github.com/geovb/geovb/internal/readmetest"
)

// The Go block of the README's "One model, several methods" section is part of Example (example_test.go) line for
// line, so that what the README shows compiles and runs.
func TestReadmeExample(t *testing.T) {
	readmetest.Check(t, "../README.md", "## One model, several methods", "example_test.go", "Example", 20)
}
