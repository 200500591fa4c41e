package readmetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder stands in for the test that Check reports to; Fatalf stops Check by panicking.
type recorder struct {
	testing.TB
	msgs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
	panic(r)
}

// TestCheck runs Check on small files: the block found in the function passes; a changed line, a block out of
// order, a missing section or function, and a block over the line limit are reported.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	src := "package x\n\nfunc Example() {\n\ta := 1\n\n\tb := a + 1\n\tfmt.Println(b)\n}\n"
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	srcPath := write("x_test.go", src)
	readme := func(block string) string {
		return write("README.md", "# x\n\n### Use\n\nText.\n\n```go\n"+block+"```\n\n### Next\n")
	}
	check := func(readmePath, heading, fn string, max int) (msgs []string) {
		r := &recorder{TB: t}
		defer func() {
			if p := recover(); p != nil && p != r {
				panic(p)
			}
			msgs = r.msgs
		}()
		Check(r, readmePath, heading, srcPath, fn, max)
		return r.msgs
	}
	if msgs := check(readme("b := a + 1\n\n    fmt.Println(b)\n"), "### Use", "Example", 20); len(msgs) > 0 {
		t.Errorf("a block in the function: %v", msgs)
	}
	for _, c := range []struct {
		name, block, heading, fn string
		max                      int
		want                     string
	}{
		{"changed line", "b := a + 2\n", "### Use", "Example", 20, "is not in Example"},
		{"out of order", "fmt.Println(b)\nb := a + 1\n", "### Use", "Example", 20, "is not in Example"},
		{"no section", "a := 1\n", "### Other", "Example", 20, "no section"},
		{"no function", "a := 1\n", "### Use", "Example_two", 20, "no func Example_two"},
		{"too long", "a := 1\nb := a + 1\n", "### Use", "Example", 2, "has 2 lines, want under 2"},
	} {
		msgs := check(readme(c.block), c.heading, c.fn, c.max)
		if len(msgs) == 0 || !strings.Contains(strings.Join(msgs, "\n"), c.want) {
			t.Errorf("%s: reports %q, want one saying %q", c.name, msgs, c.want)
		}
	}
}
