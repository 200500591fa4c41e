//go:build !amd64

package vec

// UseFMA is false off amd64: Dot and Axpy use the generic loops.
var UseFMA = false

func dotFMA(x, y []float64) float64         { return dotGeneric(x, y) }
func axpyFMA(alpha float64, x, y []float64) { axpyGeneric(alpha, x, y) }

// Off amd64 UseFMA is false and AccTN/DotRows never reach the kernels.
func accTN(w, nc int, c *float64, ldc int, a *float64, lda int, x *float64, ldx int, rows int) {
	panic("vec: no accTN kernel")
}

func dotRows(nc int, t *float64, ldt int, w *float64, ldw int, q *float64, ldq int, n, rows int) {
	panic("vec: no dotRows kernel")
}

// UseAVX512 is false off amd64.
var UseAVX512 = false

func accTN512(c []float64, ldc int, w []float64, ldw int, x []float64, ldx int, rows, p, k int) {
	panic("vec: no AVX-512 accTN kernel")
}

func dotRows512(t []float64, ldt int, w []float64, ldw int, q []float64, ldq int, rows, p, k int) {
	panic("vec: no AVX-512 dotRows kernel")
}

func scaleRows512(x *float64, ldx int, s *float64, rows int, m1, m2 int) {
	panic("vec: no AVX-512 scaleRows kernel")
}

func addScaledRows512(d *float64, ldd int, t *float64, ldt int, s, m *float64, minc int, rows int, m1, m2 int) {
	panic("vec: no AVX-512 addScaledRows kernel")
}
