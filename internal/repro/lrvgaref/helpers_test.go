package lrvgaref

import (
	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/models/glm"
)

// linearData is the Fig. 2 recipe at small size.
func linearData(d, n int, seed uint64) *glm.Data {
	x, _ := glm.Linear(glm.NewDesign(d, 1, seed), n, 1, seed)
	return x
}

// densePrec returns W Wᵀ + Ψ (d×d) from row-major W and ψ (test reference, small d).
func densePrec(w, psi []float64, d, p int) *mat.SymDense {
	prec := mat.NewSymDense(d, nil)
	prec.SymOuterK(1, mat.NewDense(d, p, w))
	for i, v := range psi {
		prec.SetSym(i, i, prec.At(i, i)+v)
	}
	return prec
}

func dotHost(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
