package backendtest

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// Plain float64 helpers for the geometry groups (stiefel, spd, kron): random points with a given conditioning and
// independent references computed with gonum/mat, never with the backend under test.

// geoRNG returns a deterministic generator for a test case.
func geoRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6e0b_5eed)) }

// geoQF is the independent reference qf(a): the Q of the thin QR with diag(R) > 0 (paper 000 eq. (3.9)), from
// mat.QR. For n ≤ 600 the full Q is formed by mat.QR and its first p columns sign-fixed; for taller matrices (where
// the n×n Q of mat.QR is too big) Q = A R₊⁻¹ with R₊ = diag(sign R_jj) R, which is accurate to κ(A)·ε.
func geoQF(a *mat.Dense) *mat.Dense {
	n, p := a.Dims()
	var qr mat.QR
	qr.Factorize(a)
	var rfull mat.Dense
	qr.RTo(&rfull)
	sign := make([]float64, p)
	for j := range sign {
		sign[j] = 1
		if rfull.At(j, j) < 0 {
			sign[j] = -1
		}
	}
	q := mat.NewDense(n, p, nil)
	if n <= 600 {
		var qfull mat.Dense
		qr.QTo(&qfull)
		for i := 0; i < n; i++ {
			for j := 0; j < p; j++ {
				q.Set(i, j, sign[j]*qfull.At(i, j))
			}
		}
		return q
	}
	rp := blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: p, Stride: p, Data: make([]float64, p*p)}
	for i := 0; i < p; i++ {
		for j := i; j < p; j++ {
			rp.Data[i*p+j] = sign[i] * rfull.At(i, j)
		}
	}
	q.Copy(a)
	blas64.Trsm(blas.Right, blas.NoTrans, 1, rp, q.RawMatrix())
	return q
}

// geoOrtho returns a random n×p matrix with orthonormal columns (Haar-distributed after the sign fix).
func geoOrtho(r *rand.Rand, n, p int) *mat.Dense { return geoQF(normalDense(r, n, p, 1)) }

// geoWithCond returns a random n×p matrix with singular values log-spaced from 1 to 1/cond.
func geoWithCond(r *rand.Rand, n, p int, cond float64) *mat.Dense {
	u, v := geoOrtho(r, n, p), geoOrtho(r, p, p)
	for j := 0; j < p; j++ {
		s := 1.0
		if p > 1 {
			s = math.Pow(cond, -float64(j)/float64(p-1))
		}
		for i := 0; i < n; i++ {
			u.Set(i, j, u.At(i, j)*s)
		}
	}
	var a mat.Dense
	a.Mul(u, v.T())
	return &a
}

// geoSPD returns a random d×d SPD matrix Q diag(λ) Qᵀ with λ log-spaced from scale down to scale/cond, stored
// exactly symmetric.
func geoSPD(r *rand.Rand, d int, cond, scale float64) *mat.Dense {
	q := geoOrtho(r, d, d)
	lam := make([]float64, d)
	for i := range lam {
		lam[i] = scale
		if d > 1 {
			lam[i] = scale * math.Pow(cond, -float64(i)/float64(d-1))
		}
	}
	s := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		for j := 0; j <= i; j++ {
			var v float64
			for k := 0; k < d; k++ {
				v += q.At(i, k) * lam[k] * q.At(j, k)
			}
			s.Set(i, j, v)
			s.Set(j, i, v)
		}
	}
	return s
}

// geoSym returns a random symmetric d×d matrix with Frobenius norm scale.
func geoSym(r *rand.Rand, d int, scale float64) *mat.Dense {
	g := normalDense(r, d, d, 1)
	s := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		for j := 0; j <= i; j++ {
			v := g.At(i, j) + g.At(j, i)
			s.Set(i, j, v)
			s.Set(j, i, v)
		}
	}
	s.Scale(scale/mat.Norm(s, 2), s)
	return s
}

// geoHost stacks matrices of one shape into a contiguous host tensor.
func geoHost(ms []*mat.Dense) *tensor.Tensor {
	r, c := ms[0].Dims()
	h := tensor.NewHost(len(ms), r, c)
	for b, m := range ms {
		h.Dense(b).Copy(m)
	}
	return h
}

// geoUp uploads matrices as one backend tensor.
func geoUp(t testing.TB, b backend.Backend, ms []*mat.Dense) *tensor.Tensor {
	t.Helper()
	return upload(t, b, geoHost(ms))
}

// geoDown downloads a backend tensor as a list of gonum matrices.
func geoDown(t testing.TB, b backend.Backend, d *tensor.Tensor) []*mat.Dense {
	t.Helper()
	h := download(t, b, d)
	out := make([]*mat.Dense, h.Batch())
	for i := range out {
		out[i] = h.ToDense(i)
	}
	return out
}

// geoRelErr returns ‖a − b‖_F / ‖b‖_F (‖a − b‖_F when b = 0).
func geoRelErr(a, b mat.Matrix) float64 {
	var d mat.Dense
	d.Sub(a, b)
	nb := mat.Norm(b, 2)
	if nb == 0 {
		return mat.Norm(&d, 2)
	}
	return mat.Norm(&d, 2) / nb
}

// geoMaxAbs returns max |a_ij − b_ij|.
func geoMaxAbs(a, b mat.Matrix) float64 {
	r, c := a.Dims()
	var m float64
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			d := math.Abs(a.At(i, j) - b.At(i, j))
			if math.IsNaN(d) {
				return math.Inf(1)
			}
			m = max(m, d)
		}
	}
	return m
}

// geoSentinel fills a backend tensor with a value so that a test can see whether an operation wrote to it.
func geoSentinel(t testing.TB, b backend.Backend, d *tensor.Tensor, v float64) {
	t.Helper()
	if err := b.Fill(d, v); err != nil {
		t.Fatalf("fill: %v", err)
	}
}

// geoUntouched fails unless every element of d is v.
func geoUntouched(t testing.TB, b backend.Backend, d *tensor.Tensor, v float64) {
	t.Helper()
	h := download(t, b, d)
	for _, x := range h.Storage().Host() {
		if x != v {
			t.Fatalf("destination written by a call that failed (found %g, want %g everywhere)", x, v)
		}
	}
}
