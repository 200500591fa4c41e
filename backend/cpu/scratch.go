package cpu

import (
	"sync"

	"gonum.org/v1/gonum/blas/blas64"
)

// scratch hands out the temporary buffers of one kernel call, zeroed, and returns them to shared pools (one per
// length) when the call ends. Without it an EM step at d = 1e6, p = 100 leaves tens of MB of garbage (the
// per-chunk p×p partial sums and per-worker row blocks, the rows-long partials of a reduction), and over a long
// stream the process's resident set drifts up to the collector's goal.
type scratch struct {
	mu   sync.Mutex
	bufs []*[]float64
}

// scratchPools maps a length to a *sync.Pool of *[]float64 of that length.
var scratchPools sync.Map

func scratchPool(n int) *sync.Pool {
	if p, ok := scratchPools.Load(n); ok {
		return p.(*sync.Pool)
	}
	p, _ := scratchPools.LoadOrStore(n, &sync.Pool{})
	return p.(*sync.Pool)
}

// dense returns a zeroed r×c contiguous matrix that lives until release. Safe for concurrent use.
func (s *scratch) dense(r, c int) blas64.General {
	n := r * c
	bp, _ := scratchPool(n).Get().(*[]float64)
	if bp == nil {
		buf := make([]float64, n)
		bp = &buf
	} else {
		clear(*bp)
	}
	s.mu.Lock()
	s.bufs = append(s.bufs, bp)
	s.mu.Unlock()
	return blas64.General{Rows: r, Cols: c, Stride: c, Data: *bp}
}

// release returns every matrix of the call to the pools; none may be used afterwards.
func (s *scratch) release() {
	for _, bp := range s.bufs {
		scratchPool(len(*bp)).Put(bp)
	}
	s.bufs = nil
}
