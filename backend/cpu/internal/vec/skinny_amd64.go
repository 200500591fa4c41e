package vec

// accTN runs the accTN{w}x{nc} kernel (w = 8 or 4 columns of W, nc = 4, 2 or 1 columns of X).
func accTN(w, nc int, c *float64, ldc int, a *float64, lda int, x *float64, ldx int, rows int) {
	switch {
	case w == 8 && nc == 4:
		accTN8x4(c, ldc, a, lda, x, ldx, rows)
	case w == 8 && nc == 2:
		accTN8x2(c, ldc, a, lda, x, ldx, rows)
	case w == 8:
		accTN8x1(c, ldc, a, lda, x, ldx, rows)
	case nc == 4:
		accTN4x4(c, ldc, a, lda, x, ldx, rows)
	case nc == 2:
		accTN4x2(c, ldc, a, lda, x, ldx, rows)
	default:
		accTN4x1(c, ldc, a, lda, x, ldx, rows)
	}
}

// dotRows runs the dotRows{nc} kernel.
func dotRows(nc int, t *float64, ldt int, w *float64, ldw int, q *float64, ldq int, n, rows int) {
	switch nc {
	case 4:
		dotRows4(t, ldt, w, ldw, q, ldq, n, rows)
	case 2:
		dotRows2(t, ldt, w, ldw, q, ldq, n, rows)
	default:
		dotRows1(t, ldt, w, ldw, q, ldq, n, rows)
	}
}

//go:noescape
func accTN8x4(c *float64, ldc int, w *float64, ldw int, x *float64, ldx int, rows int)

//go:noescape
func accTN8x2(c *float64, ldc int, w *float64, ldw int, x *float64, ldx int, rows int)

//go:noescape
func accTN8x1(c *float64, ldc int, w *float64, ldw int, x *float64, ldx int, rows int)

//go:noescape
func accTN4x4(c *float64, ldc int, w *float64, ldw int, x *float64, ldx int, rows int)

//go:noescape
func accTN4x2(c *float64, ldc int, w *float64, ldw int, x *float64, ldx int, rows int)

//go:noescape
func accTN4x1(c *float64, ldc int, w *float64, ldw int, x *float64, ldx int, rows int)

//go:noescape
func dotRows4(t *float64, ldt int, w *float64, ldw int, q *float64, ldq int, n int, rows int)

//go:noescape
func dotRows2(t *float64, ldt int, w *float64, ldw int, q *float64, ldq int, n int, rows int)

//go:noescape
func dotRows1(t *float64, ldt int, w *float64, ldw int, q *float64, ldq int, n int, rows int)
