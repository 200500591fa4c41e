//go:build race

package lrvga

// raceEnabled: the race detector makes sync.Pool drop a random share of what is put back, so the allocation
// bounds that rely on the GEMM kernels' pooled workspace do not hold under it.
const raceEnabled = true
