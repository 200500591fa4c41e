// Package repro gates the paper reproductions: long tests named TestRepro… that CI runs with `go test -run Repro`
// and that a plain `go test ./...` skips, so the default run stays fast.
package repro

import (
	"flag"
	"os"
	"strings"
	"testing"
)

// EnvVar forces the reproductions on (GEOVB_REPRO=1) whatever -run says.
const EnvVar = "GEOVB_REPRO"

// Require skips the calling test unless -run names a reproduction (contains "Repro") or GEOVB_REPRO=1, and always
// under -short.
func Require(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("reproduction skipped with -short")
	}
	if os.Getenv(EnvVar) == "1" {
		return
	}
	if f := flag.Lookup("test.run"); f != nil && strings.Contains(f.Value.String(), "Repro") {
		return
	}
	t.Skip("reproduction: run with -run Repro or " + EnvVar + "=1")
}
