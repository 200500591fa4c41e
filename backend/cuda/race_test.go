//go:build race

package cuda

// raceEnabled: the race detector makes sync.Pool drop a random share of what is put back, so allocation figures
// that depend on pooling do not hold under it.
const raceEnabled = true
