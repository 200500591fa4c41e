//go:build race

package gemm

// raceEnabled: the race detector makes sync.Pool drop a random share of what is put back, so allocation counts
// that depend on pooling do not hold under it.
const raceEnabled = true
