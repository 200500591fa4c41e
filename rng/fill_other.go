//go:build !amd64

package rng

// bestKernel: no vector kernel off amd64, FillNormal and FillUniform do all the work in Go.
const bestKernel = kernelGo

// fillPairs has no vector kernel off amd64.
func (c Counter) fillPairs(dst []float64, blk uint64, normal bool) int { return 0 }
