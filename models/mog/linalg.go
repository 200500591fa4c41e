package mog

import "math"

// Small dense helpers for the D×D Wishart blocks (D is 2 in the paper's experiments).

// cholesky overwrites the symmetric matrix a (n×n, row-major, lower triangle read) with its lower Cholesky factor
// and zeroes the upper triangle. It reports false when a is not numerically positive definite.
func cholesky(a []float64, n int) bool {
	for j := range n {
		d := a[j*n+j]
		for k := range j {
			d -= a[j*n+k] * a[j*n+k]
		}
		if !(d > 0) {
			return false
		}
		d = math.Sqrt(d)
		a[j*n+j] = d
		for i := j + 1; i < n; i++ {
			v := a[i*n+j]
			for k := range j {
				v -= a[i*n+k] * a[j*n+k]
			}
			a[i*n+j] = v / d
		}
		for i := range j {
			a[i*n+j] = 0
		}
	}
	return true
}

// cholLogDet returns log|A| = 2Σ log L_ii.
func cholLogDet(l []float64, n int) float64 {
	var s float64
	for i := range n {
		s += math.Log(l[i*n+i])
	}
	return 2 * s
}

// cholInverse writes A⁻¹ = L⁻ᵀL⁻¹ into dst (symmetrised).
func cholInverse(dst, l []float64, n int) {
	col := make([]float64, n)
	for c := range n {
		// Solve L y = e_c, then Lᵀ z = y.
		for i := range n {
			v := 0.0
			if i == c {
				v = 1
			}
			for k := range i {
				v -= l[i*n+k] * col[k]
			}
			col[i] = v / l[i*n+i]
		}
		for i := n - 1; i >= 0; i-- {
			v := col[i]
			for k := i + 1; k < n; k++ {
				v -= l[k*n+i] * col[k]
			}
			col[i] = v / l[i*n+i]
		}
		for i := range n {
			dst[i*n+c] = col[i]
		}
	}
	for i := range n {
		for j := range i {
			v := 0.5 * (dst[i*n+j] + dst[j*n+i])
			dst[i*n+j], dst[j*n+i] = v, v
		}
	}
}

// quadChol returns vᵀAv = ‖Lᵀv‖² for A = LLᵀ; tmp has length n.
func quadChol(l, v, tmp []float64, n int) float64 {
	var s float64
	for j := range n {
		var t float64
		for i := j; i < n; i++ {
			t += l[i*n+j] * v[i]
		}
		tmp[j] = t
		s += t * t
	}
	return s
}
