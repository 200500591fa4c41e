package run

import "math"

// Smoother is the smoothed lower-bound stopping rule of the manifold VB methods (paper 000 Algorithm 1, as the
// authors' code implements it): the objective is averaged over a moving window; after BurnIn iterations each smoothed value is compared
// with the best so far, and the run stops with Patience once Patience consecutive values fail to beat it. The
// caller keeps its best parameters when Add reports an improvement (the output of the method is the best iterate,
// not the last).
type Smoother struct {
	Window   int // values averaged (the paper's code averages w+1 values for w = 10: set Window = 11 to match)
	Patience int // non-improving smoothed values tolerated
	BurnIn   int // iterations before the rule starts comparing

	buf      []float64
	next     int
	n        int
	sum      float64
	best     float64
	haveBest bool
	waiting  int
	seen     int
}

// Add records the objective of one iteration. smoothed is the window mean (NaN until the window is full);
// improved says that it is the best smoothed value so far; stop says that the patience ran out.
func (s *Smoother) Add(objective float64) (smoothed float64, improved, stop bool) {
	w := max(s.Window, 1)
	if len(s.buf) != w {
		s.buf = make([]float64, w)
		s.next, s.n, s.sum = 0, 0, 0
	}
	s.seen++
	if s.n == w {
		s.sum -= s.buf[s.next]
	} else {
		s.n++
	}
	s.buf[s.next] = objective
	s.sum += objective
	s.next = (s.next + 1) % w
	if s.n < w {
		return math.NaN(), false, false
	}
	// Recompute the window sum now and then so that the running sum does not drift.
	if s.seen%(64*w) == 0 {
		s.sum = 0
		for _, v := range s.buf {
			s.sum += v
		}
	}
	smoothed = s.sum / float64(w)
	if s.seen <= s.BurnIn {
		return smoothed, false, false
	}
	if !s.haveBest || smoothed >= s.best {
		s.best, s.haveBest, s.waiting = smoothed, true, 0
		return smoothed, true, false
	}
	s.waiting++
	return smoothed, false, s.Patience > 0 && s.waiting > s.Patience
}

// Best returns the best smoothed value so far and whether there is one.
func (s *Smoother) Best() (float64, bool) { return s.best, s.haveBest }

// SmootherState is the part of a Smoother a checkpoint needs.
type SmootherState struct {
	Buf      []float64
	Next, N  int
	Sum      float64
	Best     float64
	HaveBest bool
	Waiting  int
	Seen     int
}

// Save returns the smoother's state for a checkpoint.
func (s *Smoother) Save() SmootherState {
	return SmootherState{Buf: append([]float64(nil), s.buf...), Next: s.next, N: s.n, Sum: s.sum, Best: s.best,
		HaveBest: s.haveBest, Waiting: s.waiting, Seen: s.seen}
}

// Restore puts back a state from Save.
func (s *Smoother) Restore(st SmootherState) {
	s.buf = append([]float64(nil), st.Buf...)
	s.next, s.n, s.sum, s.best, s.haveBest, s.waiting, s.seen = st.Next, st.N, st.Sum, st.Best, st.HaveBest, st.Waiting, st.Seen
}
