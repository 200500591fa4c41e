package mog

import (
	"runtime"
	"sync"
)

// minPairsPerWorker is the number of (point, component) pairs below which one more goroutine costs more than it
// saves (an exp or a D-dimensional quadratic form per pair, 10–20 ns).
const minPairsPerWorker = 16384

// parallelRows runs f over [0, n) — the points, or the components — in contiguous blocks on up to GOMAXPROCS
// goroutines when there are enough (point, component) pairs to pay for them, else on the caller. f must write only
// what belongs to its block, so that the result is the same bits for every split.
func parallelRows(n, pairs int, f func(lo, hi int)) {
	w := min(runtime.GOMAXPROCS(0), pairs/minPairsPerWorker, n)
	if w <= 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for i := range w {
		lo, hi := i*n/w, (i+1)*n/w
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	wg.Wait()
}

// stackD is the dimension up to which a worker's two D-vectors live in an array on its stack (the experiments have
// D ≤ 10), so the point-parallel passes allocate nothing.
const stackD = 16

// twoVectors returns two D-vectors in buf, or freshly allocated ones when buf is too short.
func twoVectors(buf []float64, D int) (a, b []float64) {
	if 2*D > len(buf) {
		buf = make([]float64, 2*D)
	}
	return buf[:D:D], buf[D : 2*D : 2*D]
}
