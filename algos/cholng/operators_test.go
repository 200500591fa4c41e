package cholng

import "gonum.org/v1/gonum/mat"

// The matrix operators of paper 003 §2, column-major vec and vech (lower triangle column by column).
// They are references for the tests; the algorithms never form them.

// Vech returns vech(A) of a d×d matrix.
func Vech(a mat.Matrix) []float64 {
	d, _ := a.Dims()
	out := make([]float64, 0, d*(d+1)/2)
	for j := 0; j < d; j++ {
		for i := j; i < d; i++ {
			out = append(out, a.At(i, j))
		}
	}
	return out
}

// Unvech returns the lower-triangular d×d matrix with vech v.
func Unvech(v []float64, d int) *mat.Dense {
	a := mat.NewDense(d, d, nil)
	k := 0
	for j := 0; j < d; j++ {
		for i := j; i < d; i++ {
			a.Set(i, j, v[k])
			k++
		}
	}
	return a
}

// vecIdx is the position of (i, j) in vec of a d×d matrix; vechIdx0 in vech (i ≥ j).
func vecIdx(i, j, d int) int   { return j*d + i }
func vechIdx0(i, j, d int) int { return j*d - j*(j-1)/2 + (i - j) }

// Elimination is L: L vec(A) = vech(A).
func Elimination(d int) *mat.Dense {
	n := d * (d + 1) / 2
	l := mat.NewDense(n, d*d, nil)
	for j := 0; j < d; j++ {
		for i := j; i < d; i++ {
			l.Set(vechIdx0(i, j, d), vecIdx(i, j, d), 1)
		}
	}
	return l
}

// Commutation is K: K vec(A) = vec(Aᵀ).
func Commutation(d int) *mat.Dense {
	k := mat.NewDense(d*d, d*d, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			k.Set(vecIdx(j, i, d), vecIdx(i, j, d), 1)
		}
	}
	return k
}

// Duplication is D: D vech(A) = vec(A) for symmetric A.
func Duplication(d int) *mat.Dense {
	n := d * (d + 1) / 2
	dm := mat.NewDense(d*d, n, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			dm.Set(vecIdx(i, j, d), vechIdx0(max(i, j), min(i, j), d), 1)
		}
	}
	return dm
}
