package slots

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFront checks Front against counting on random masks of every size up to 12: the first k slots are wanted,
// the others not, k is the count of wanted runs, every run is still there once, and no swap exchanges two runs that
// were both in place (at most min(wanted behind, unwanted in front) swaps).
func TestFront(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 13 {
		for range 50 {
			wanted := make([]bool, n)
			runs := make([]int, n) // runs[slot] = run id
			count := 0
			for i := range n {
				wanted[i], runs[i] = rng.IntN(2) == 0, i
				if wanted[i] {
					count++
				}
			}
			misplaced := 0 // wanted runs behind the first count slots
			for i := count; i < n; i++ {
				if wanted[i] {
					misplaced++
				}
			}
			swaps := 0
			k, err := Front(n, func(i int) bool { return wanted[runs[i]] }, func(i, j int) error {
				if i >= j {
					t.Fatalf("swap(%d, %d): want i < j", i, j)
				}
				runs[i], runs[j] = runs[j], runs[i]
				swaps++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if k != count || swaps != misplaced {
				t.Fatalf("n %d mask %v: k = %d after %d swaps, want %d after %d", n, wanted, k, swaps, count, misplaced)
			}
			for i, r := range runs {
				if wanted[r] != (i < k) {
					t.Fatalf("n %d mask %v: slot %d holds run %d after Front (k = %d)", n, wanted, i, r, k)
				}
			}
			sorted := slices.Clone(runs)
			slices.Sort(sorted)
			for i, r := range sorted {
				if r != i {
					t.Fatalf("runs lost or duplicated: %v", runs)
				}
			}
		}
	}
}

// TestFrontSwapError: a failing swap stops Front with its error.
func TestFrontSwapError(t *testing.T) {
	bad := errors.New("swap failed")
	_, err := Front(3, func(i int) bool { return i == 2 }, func(i, j int) error { return bad })
	if !errors.Is(err, bad) {
		t.Errorf("err = %v, want the swap's", err)
	}
}
