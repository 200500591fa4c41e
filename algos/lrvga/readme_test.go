package lrvga

import (
	"os"
	"strings"
	"testing"
)

// The Go block of the README's L-RVGA section is Example_d1e6 (example_test.go) line for line, so that what the
// README shows compiles: every line of the block, trimmed, must appear in order and contiguously in the body of
// Example_d1e6, and the block must stay under 20 lines.
func TestReadmeExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(readme), "### Streaming logistic regression at d = 1e6 (L-RVGA)")
	if !ok {
		t.Fatal("README: no L-RVGA section")
	}
	_, blk, ok := strings.Cut(sec, "```go\n")
	if !ok {
		t.Fatal("README L-RVGA section: no Go block")
	}
	blk, _, _ = strings.Cut(blk, "```")
	_, body, ok := strings.Cut(string(src), "func Example_d1e6() {\n")
	if !ok {
		t.Fatal("example_test.go: no Example_d1e6")
	}
	body, _, _ = strings.Cut(body, "\n}\n")
	trim := func(s string) []string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
		return out
	}
	want, got := trim(blk), trim(body)
	if len(want) >= 20 {
		t.Errorf("README block has %d lines, want under 20", len(want))
	}
	joined := "\n" + strings.Join(got, "\n") + "\n"
	if !strings.Contains(joined, "\n"+strings.Join(want, "\n")+"\n") {
		t.Errorf("README block and Example_d1e6 differ:\nREADME:\n%s\nExample_d1e6:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
}
