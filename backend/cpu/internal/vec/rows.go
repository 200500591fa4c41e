package vec

import "math"

// ScaleRows sets x[r][j] *= s[r] for r < rows, j < k (x has row stride ldx).
func ScaleRows(x []float64, ldx int, s []float64, rows, k int) {
	if rows <= 0 || k <= 0 {
		return
	}
	need("ScaleRows", "x", x, rows, ldx, k)
	need("ScaleRows", "s", s, rows, 1, 1)
	if UseAVX512 && k <= 16 {
		m1, m2 := rowMasks(k)
		scaleRows512(&x[0], ldx, &s[0], rows, m1, m2)
		return
	}
	for r := 0; r < rows; r++ {
		f := s[r]
		for j := range x[r*ldx : r*ldx+k] {
			x[r*ldx+j] *= f
		}
	}
}

// AddScaledRows sets d[r][j] += t[r][j]·s[r] + m[r] for r < rows, j < k (m nil: no shift), t·s + m rounded once.
// d and t have row strides ldd and ldt.
func AddScaledRows(d []float64, ldd int, t []float64, ldt int, s, m []float64, rows, k int) {
	if rows <= 0 || k <= 0 {
		return
	}
	need("AddScaledRows", "d", d, rows, ldd, k)
	need("AddScaledRows", "t", t, rows, ldt, k)
	need("AddScaledRows", "s", s, rows, 1, 1)
	if m != nil {
		need("AddScaledRows", "m", m, rows, 1, 1)
	}
	if UseAVX512 && k <= 16 {
		m1, m2 := rowMasks(k)
		mp, minc := &zero, 0
		if m != nil {
			mp, minc = &m[0], 1
		}
		addScaledRows512(&d[0], ldd, &t[0], ldt, &s[0], mp, minc, rows, m1, m2)
		return
	}
	for r := 0; r < rows; r++ {
		f, c := s[r], 0.0
		if m != nil {
			c = m[r]
		}
		tr := t[r*ldt : r*ldt+k]
		for j, v := range tr {
			d[r*ldd+j] += math.FMA(v, f, c) // as the kernel rounds, so every path gives the same bits
		}
	}
}

// zero is the shift AddScaledRows reads when it has none.
var zero float64

// rowMasks returns the opmasks of a row of k ≤ 16 elements over two 8-lane registers.
func rowMasks(k int) (int, int) {
	if k <= 8 {
		return 1<<k - 1, 0
	}
	return 0xff, 1<<(k-8) - 1
}
