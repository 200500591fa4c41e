package cpu

import (
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// O(d²) kernels for the Cholesky-factor natural gradient of paper 003 (backend/cholng.go): the Lemma 1 product as a
// reverse cumulative sum along each row (an O(d²) form of Lemma 1, not in the paper) and the masked outer product,
// parallel over the batch.

func init() {
	backend.CholNGTriOp.Register(backend.Kernel[backend.CholNGTriFunc]{
		Name: "cpu.cholng.tri.scan", Backend: Name, Priority: 10, Applies: isCPU, Fn: cholNGTriScan})
	backend.LowerOuterOp.Register(backend.Kernel[backend.LowerOuterFunc]{
		Name: "cpu.cholng.lowerouter.loop", Backend: Name, Priority: 10, Applies: isCPU, Fn: lowerOuterLoop})
}

// colVec returns the entries of the d×1 matrix bb of t (batch 1 broadcast).
func colVec(t *tensor.Tensor, bb int, out []float64) []float64 {
	data, stride, rows, _ := matrix(t, bi(t, bb))
	out = out[:rows]
	for i := range out {
		out[i] = data[i*stride]
	}
	return out
}

// cholNGTriScan computes dst = α·Λ·dbar(lower(x yᵀ)): entry (i, j ≤ i) is α·y_j(Σ_{k=j}^{i} Λ_ik x_k − ½Λ_ij x_j).
func cholNGTriScan(be backend.Backend, dst, l, x, y *tensor.Tensor, alpha float64) error {
	b := be.(*Backend)
	if err := checkHost("cholng.tri", []string{"dst", "l", "x", "y"}, dst, l, x, y); err != nil {
		return err
	}
	d := dst.Rows()
	b.parallelWork(dst.Batch(), 2*float64(d)*float64(d), func(lo, hi int) {
		xv, yv := make([]float64, d), make([]float64, d)
		for bb := lo; bb < hi; bb++ {
			xv, yv = colVec(x, bb, xv), colVec(y, bb, yv)
			L, D := general(l, bb), general(dst, bb)
			for i := 0; i < d; i++ {
				lr, dr := L.Data[i*L.Stride:i*L.Stride+d], D.Data[i*D.Stride:i*D.Stride+d]
				// Reverse cumulative sum s = Σ_{k=j}^{i} Λ_ik x_k from k = i down to j.
				var s float64
				for j := i; j >= 0; j-- {
					t := lr[j] * xv[j]
					s += t
					dr[j] = alpha * yv[j] * (s - 0.5*t)
				}
				clear(dr[i+1:])
			}
		}
	})
	return nil
}

// lowerOuterLoop computes dst = α·lower(x yᵀ) with the diagonal kept.
func lowerOuterLoop(be backend.Backend, dst, x, y *tensor.Tensor, alpha float64) error {
	b := be.(*Backend)
	if err := checkHost("cholng.lowerouter", []string{"dst", "x", "y"}, dst, x, y); err != nil {
		return err
	}
	d := dst.Rows()
	b.parallelWork(dst.Batch(), float64(d)*float64(d), func(lo, hi int) {
		xv, yv := make([]float64, d), make([]float64, d)
		for bb := lo; bb < hi; bb++ {
			xv, yv = colVec(x, bb, xv), colVec(y, bb, yv)
			D := general(dst, bb)
			for i := 0; i < d; i++ {
				dr := D.Data[i*D.Stride : i*D.Stride+d]
				ax := alpha * xv[i]
				for j := 0; j <= i; j++ {
					dr[j] = ax * yv[j]
				}
				clear(dr[i+1:])
			}
		}
	})
	return nil
}
