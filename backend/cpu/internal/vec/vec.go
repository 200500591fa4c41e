// Package vec holds the CPU backend's vector kernels for its small-matrix paths: dot products and axpys over short
// contiguous columns, where call overhead and the width of the arithmetic decide the speed. Dot and Axpy use AVX2
// with FMA where the CPU has it (vec_amd64.s) and the generic loops otherwise; the tests check one against the
// other. It is a package of its own because the CPU backend uses cgo under the netlib tag, and a cgo package
// cannot hold Go assembly.
package vec

// Dot returns Σ x_i y_i over len(x).
func Dot(x, y []float64) float64 {
	y = y[:len(x)]
	if UseFMA {
		return dotFMA(x, y)
	}
	return dotGeneric(x, y)
}

// Axpy sets y += alpha·x over len(x).
func Axpy(alpha float64, x, y []float64) {
	y = y[:len(x)]
	if UseFMA {
		axpyFMA(alpha, x, y)
		return
	}
	axpyGeneric(alpha, x, y)
}

func dotGeneric(x, y []float64) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * y[i]
		s1 += x[i+1] * y[i+1]
		s2 += x[i+2] * y[i+2]
		s3 += x[i+3] * y[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * y[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func axpyGeneric(alpha float64, x, y []float64) {
	for i, v := range x {
		y[i] += alpha * v
	}
}
