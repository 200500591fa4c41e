package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/geovb/geovb/tensor"
)

// Eigenvalues alone of matrices whose entries lie far outside [1e-146, 1e146], where gonum's Dsyev would rescale
// them itself (and its Dsterf panics for the small ones): against the same matrix at scale 1, whose eigenvalues
// scale exactly, bit for bit, by the power of two (the two are prescaled to the same matrix), and against the path
// with vectors (relative 1e-14 of the largest).
func TestSyevValuesOnlyExtremeScales(t *testing.T) {
	b := newTestBackend(t)
	const n = 6
	r := rand.New(rand.NewPCG(3, 4))
	base := tensor.NewHost(1, n, n)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			x := r.NormFloat64()
			base.Set(0, i, j, x)
			base.Set(0, j, i, x)
		}
	}
	ref := tensor.NewHost(1, n, 1)
	if err := b.Syev(ref, nil, base); err != nil {
		t.Fatal(err)
	}
	for _, e := range []int{-700, -500, 500, 900} {
		a := tensor.NewHost(1, n, n)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				a.Set(0, i, j, math.Ldexp(base.At(0, i, j), e))
			}
		}
		w, wv, v := tensor.NewHost(1, n, 1), tensor.NewHost(1, n, 1), tensor.NewHost(1, n, n)
		if err := b.Syev(w, nil, a); err != nil {
			t.Fatalf("2^%d: %v", e, err)
		}
		if err := b.Syev(wv, v, a); err != nil {
			t.Fatalf("2^%d with vectors: %v", e, err)
		}
		for k := 0; k < n; k++ {
			want := ref.At(0, k, 0)
			if got := math.Ldexp(w.At(0, k, 0), -e); got != want {
				t.Errorf("2^%d: eigenvalue %d = %v·2^%d, want %v", e, k, got, e, want)
			}
			if got, with := w.At(0, k, 0), wv.At(0, k, 0); math.Abs(got-with) > 1e-14*math.Abs(wv.At(0, n-1, 0)) {
				t.Errorf("2^%d: eigenvalue %d = %v, with vectors %v", e, k, got, with)
			}
		}
	}
}
