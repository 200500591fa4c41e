//go:build !amd64

package vec

// UseFMA is false off amd64: Dot and Axpy use the generic loops.
const UseFMA = false

func dotFMA(x, y []float64) float64         { return dotGeneric(x, y) }
func axpyFMA(alpha float64, x, y []float64) { axpyGeneric(alpha, x, y) }
