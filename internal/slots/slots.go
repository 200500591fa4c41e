// Package slots orders the slots of a batch of runs. Batched drivers keep the runs a step concerns in the first
// slots, so that each call of the backend covers a prefix of the batch rather than every run.
package slots

// Front swaps the slots among the first n for which want is true to the front, with as few swaps as two pointers
// from both ends need, and returns how many there are. want(i) is asked of the run in slot i at the time; swap(i, j)
// must exchange everything the batch holds for slots i and j (i < j). The order within each part is not kept.
func Front(n int, want func(i int) bool, swap func(i, j int) error) (int, error) {
	k, hi := 0, n-1
	for {
		for k < n && want(k) {
			k++
		}
		for hi >= 0 && !want(hi) {
			hi--
		}
		if k >= hi {
			return k, nil
		}
		if err := swap(k, hi); err != nil {
			return 0, err
		}
	}
}
