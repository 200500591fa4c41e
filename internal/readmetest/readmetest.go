// Package readmetest checks that a Go block of the README is the body of a tested example, so that what the README
// shows compiles and runs.
package readmetest

import (
	"os"
	"strings"
	"testing"
)

// Check fails t unless the first Go block after the line heading of the file readme appears in the body of the
// function fn of the file src, line for line (lines trimmed, blank lines dropped), in order and contiguously, and
// has fewer than maxLines lines. Paths are relative to the calling test's folder.
func Check(t testing.TB, readme, heading, src, fn string, maxLines int) {
	t.Helper()
	text, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	code, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(text), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s: no section %q", readme, heading)
	}
	_, blk, ok := strings.Cut(sec, "```go\n")
	if !ok {
		t.Fatalf("%s, section %q: no Go block", readme, heading)
	}
	blk, _, _ = strings.Cut(blk, "```")
	_, body, ok := strings.Cut(string(code), "func "+fn+"() {\n")
	if !ok {
		t.Fatalf("%s: no func %s", src, fn)
	}
	body, _, _ = strings.Cut(body, "\n}\n")
	want, got := lines(blk), lines(body)
	if len(want) >= maxLines {
		t.Errorf("%s, section %q: the Go block has %d lines, want under %d", readme, heading, len(want), maxLines)
	}
	joined := "\n" + strings.Join(got, "\n") + "\n"
	if len(want) == 0 || !strings.Contains(joined, "\n"+strings.Join(want, "\n")+"\n") {
		t.Errorf("the Go block of %s, section %q, is not in %s:\nREADME:\n%s\n%s:\n%s", readme, heading, fn,
			strings.Join(want, "\n"), fn, strings.Join(got, "\n"))
	}
}

// lines returns the non-blank lines of s, trimmed.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
