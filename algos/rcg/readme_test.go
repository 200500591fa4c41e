package rcg_test

import (
	"testing"

	"github.com/geovb/geovb/internal/readmetest"
)

// The Go block of the README's RCG section is Example_ownModel (objective_example_test.go) line for line, so that
// what the README shows compiles and prints what it says; the block stays under 20 lines.
func TestReadmeExample(t *testing.T) {
	readmetest.Check(t, "../../README.md", "### Riemannian conjugate gradient on a model of one's own (RCG)",
		"objective_example_test.go", "Example_ownModel", 20)
}
