package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/geovb/geovb/tensor"
)

// The Gram–Schmidt path of the small QR kernel against its Householder path, on inputs that exercise the DGKS
// reorthogonalisation (nearly parallel columns) and the fallback (an exactly dependent column).
func TestSmallQRPaths(t *testing.T) {
	const n, p = 50, 6
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		name    string
		spread  float64 // size of what distinguishes the columns from column 0
		wantCGS bool
	}{{"random", 1, true}, {"nearly parallel", 1e-3, true}, {"dependent", 0, false}} {
		a := make([]float64, n*p)
		for i := 0; i < n; i++ {
			a[i] = r.NormFloat64()
		}
		for j := 1; j < p; j++ {
			for i := 0; i < n; i++ {
				a[j*n+i] = a[i] + c.spread*r.NormFloat64()
			}
		}
		w := newQRSmallWork(n, p)
		copy(w.a, a)
		q := make([]float64, n*p)
		ok := cgs2ColMajor(a, q, make([]float64, p), n, p)
		if ok != c.wantCGS {
			t.Fatalf("%s: Gram–Schmidt accepted = %v, want %v", c.name, ok, c.wantCGS)
		}
		if !ok {
			continue
		}
		var orth float64
		for k := 0; k < p; k++ {
			for l := 0; l < p; l++ {
				var d float64
				for i := 0; i < n; i++ {
					d += q[k*n+i] * q[l*n+i]
				}
				if k == l {
					d--
				}
				orth = math.Max(orth, math.Abs(d))
			}
		}
		if orth > 1e-14 {
			t.Errorf("%s: ‖QᵀQ − I‖max = %.3g, want ≤ 1e-14", c.name, orth)
		}
		// Both paths compute qf(a): they agree to about κ(a)·ε (κ ≈ 1/spread here).
		qfColMajor(w, n, p)
		var diff float64
		for j := 0; j < p; j++ {
			for i := 0; i < n; i++ {
				diff = math.Max(diff, math.Abs(q[j*n+i]-w.q[j*n+i]*w.sign[j]))
			}
		}
		if tol := 1e-13 / c.spread; diff > tol {
			t.Errorf("%s: Gram–Schmidt and Householder Q differ by %.3g, want ≤ %.3g", c.name, diff, tol)
		}
	}
}

// The tall kernel's own row loops and its BLAS path give the same qf(A) (to 1e-12, both backward stable for this
// well-conditioned A) at widths where either may run, whatever qrTallHandCols the build chose.
func TestTallQRLoopsAndBLAS(t *testing.T) {
	b := newTestBackend(t)
	save := qrTallHandCols
	defer func() { qrTallHandCols = save }()
	const n = 5000
	r := rand.New(rand.NewPCG(5, 6))
	for _, p := range []int{7, 8, 20, 32} {
		x := tensor.NewHost(1, n, p)
		for i := 0; i < n; i++ {
			for j := 0; j < p; j++ {
				x.Set(0, i, j, r.NormFloat64())
			}
		}
		var got [2]*tensor.Tensor
		for k, cols := range []int{0, qrTallHandMax} {
			qrTallHandCols = cols
			got[k] = tensor.NewHost(1, n, p)
			if err := qrRetractTall(b, got[k], x, nil, 0); err != nil {
				t.Fatal(err)
			}
		}
		var diff, orth float64
		for i := 0; i < n; i++ {
			for j := 0; j < p; j++ {
				diff = math.Max(diff, math.Abs(got[0].At(0, i, j)-got[1].At(0, i, j)))
			}
		}
		for k := 0; k < p; k++ {
			for l := 0; l < p; l++ {
				var d float64
				for i := 0; i < n; i++ {
					d += got[1].At(0, i, k) * got[1].At(0, i, l)
				}
				if k == l {
					d--
				}
				orth = math.Max(orth, math.Abs(d))
			}
		}
		if diff > 1e-12 || orth > 1e-12 {
			t.Errorf("p = %d: BLAS and row loops differ by %.3g, loops' ‖QᵀQ − I‖max %.3g (want ≤ 1e-12)", p, diff, orth)
		}
	}
}
