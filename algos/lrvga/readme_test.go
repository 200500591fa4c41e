package lrvga

import (
	"testing"

	"github.com/geovb/geovb/internal/readmetest"
)

// The Go block of the README's L-RVGA section is Example_d1e6 (example_test.go) line for line, so that what the
// README shows compiles; the block stays under 20 lines.
func TestReadmeExample(t *testing.T) {
	readmetest.Check(t, "../../README.md", "### Streaming logistic regression at d = 1e6 (L-RVGA)", "example_test.go",
		"Example_d1e6", 20)
}
