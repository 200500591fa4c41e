//go:build !amd64

package gemm

// Off amd64 there are no micro-kernels and every call goes to gonum.
var avx512Set, avx2Set *kernelSet

func copyPanels(d []float64, ps, w int, s []float64, ld, np, kb int) {
	copyPanelsGo(d, ps, w, s, ld, np, kb)
}

func interleave(d []float64, w int, s []float64, ld, off, h, kb int) {
	interleaveGo(d, w, s, ld, off, h, kb)
}

func prefetchRows(s *float64, ld, rows, cols int) {}

func transpose(d []float64, dw int, s []float64, ld, rows, cols int) {
	transposeGo(d, dw, s, ld, rows, cols)
}
