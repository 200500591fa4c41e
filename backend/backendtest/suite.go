// Package backendtest is the conformance suite every backend runs: each primitive and each hot operation (with
// every kernel the backend registers for it) checked against plain float64 reference code, over shapes from 1×1 to
// very tall, batches from 1 to 1e4, ill-conditioned inputs and the invariants the papers rely on. A backend passes
// by calling Run from its own test file, and gets the shared benchmarks by calling Bench.
//
// Test groups register themselves with register (one file per family); tolerances are stated next to each check.
package backendtest

import (
	"sort"
	"testing"

	"github.com/geovb/geovb/backend"
)

type group struct {
	name string
	test func(t *testing.T, b backend.Backend)
}

type benchGroup struct {
	name  string
	bench func(b *testing.B, be backend.Backend)
}

var (
	groups      []group
	benchGroups []benchGroup
)

// register adds a test group; called from init in each family's file.
func register(name string, f func(t *testing.T, b backend.Backend)) {
	groups = append(groups, group{name, f})
}

// registerBench adds a benchmark group; called from init in each family's file.
func registerBench(name string, f func(b *testing.B, be backend.Backend)) {
	benchGroups = append(benchGroups, benchGroup{name, f})
}

// Run runs every conformance group against b as subtests named after the groups.
func Run(t *testing.T, b backend.Backend) {
	gs := append([]group(nil), groups...)
	sort.Slice(gs, func(i, j int) bool { return gs[i].name < gs[j].name })
	for _, g := range gs {
		t.Run(g.name, func(t *testing.T) { g.test(t, b) })
	}
}

// Bench runs every benchmark group against be as sub-benchmarks named after the groups.
func Bench(b *testing.B, be backend.Backend) {
	gs := append([]benchGroup(nil), benchGroups...)
	sort.Slice(gs, func(i, j int) bool { return gs[i].name < gs[j].name })
	for _, g := range gs {
		b.Run(g.name, func(b *testing.B) { g.bench(b, be) })
	}
}
