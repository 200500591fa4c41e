package nfa

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
)

// chunkLen is the number of time steps in one block of eval's per-step work. The blocks are fixed by T alone and
// their partial sums are added in block order, so F and its gradient are the same bit for bit on any number of
// cores.
const chunkLen = 16

// chunk is the scratch of one block of time steps: its own moment propagators and partial sums of F, of the
// squared errors and of the weight gradients.
type chunk struct {
	a, b                 int // time steps [a, b)
	pf, pg               *prop
	F                    kahan
	obsE, stE            []float64
	gwf, gwvf, gwg, gwvg []float64
	xm, xv, gxm, gxv     []float64
	hm, hv, gJ, ghm, ghv []float64
}

func (m *Model) newChunks() {
	d, P := m.Cfg.D, m.P
	m.fw = newMLPWeights(m.f)
	if m.Cfg.Dynamic {
		m.gw = newMLPWeights(m.g)
	}
	for a := 0; a < m.T; a += chunkLen {
		c := &chunk{a: a, b: min(a+chunkLen, m.T), pf: newProp(m.f, m.Cfg.Moments, m.Cfg.GHOrder, m.fw),
			obsE: make([]float64, P), gwf: make([]float64, m.f.size()), gwvf: make([]float64, m.f.size()),
			xm: make([]float64, P), xv: make([]float64, P), gxm: make([]float64, P), gxv: make([]float64, P)}
		if m.Cfg.Dynamic {
			c.pg = newProp(m.g, m.Cfg.Moments, m.Cfg.GHOrder, m.gw)
			c.stE, c.gwg, c.gwvg = make([]float64, d), make([]float64, m.g.size()), make([]float64, m.g.size())
			c.hm, c.hv, c.gJ = make([]float64, d), make([]float64, d), make([]float64, d*d)
			c.ghm, c.ghv = make([]float64, d), make([]float64, d)
		}
		m.chunks = append(m.chunks, c)
	}
	m.prevSm, m.prevTil = make([]float64, m.T*d), make([]float64, m.T*d)
}

// stepArgs is what every block of eval reads: the means, the marginal variances, the noise precisions and, when
// grad is set, where the per-step gradients go.
type stepArgs struct {
	sm, sTil, wf, wg, psiN, psiM []float64
	grad                         bool
	gsm, gsTil                   []float64
}

// timeSteps evaluates the per-step terms of F, the observation terms (102) for every t and for the NSSM the state
// transitions (103) for t ≥ 1, block by block on up to GOMAXPROCS cores. Step t writes the gradient slots of t
// (gsm, gsTil, direct) directly and those of t − 1 (through g's inputs) into prevSm/prevTil, so no two blocks write
// the same element; the blocks' sums are then added in order. It returns the sum of the terms and leaves the
// squared-error sums in obsE, stE and the weight gradients added into gwf, gwvf, gwg, gwvg.
func (m *Model) timeSteps(s *stepArgs, gwf, gwvf, gwg, gwvg []float64) float64 {
	if s.grad {
		clear(m.prevSm)
		clear(m.prevTil)
	}
	m.fw.set(m.f, s.wf, m.WVarF)
	if m.Cfg.Dynamic {
		m.gw.set(m.g, s.wg, m.WVarG)
	}
	n := len(m.chunks)
	if workers := min(runtime.GOMAXPROCS(0), n); workers <= 1 {
		for _, c := range m.chunks {
			m.runChunk(c, s)
		}
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
					m.runChunk(m.chunks[i], s)
				}
			})
		}
		wg.Wait()
	}
	var F kahan
	clear(m.obsE)
	clear(m.stE)
	for _, c := range m.chunks {
		F.add(c.F.s)
		F.add(c.F.c)
		addTo(m.obsE, c.obsE)
		addTo(m.stE, c.stE)
		if s.grad {
			addTo(gwf, c.gwf)
			addTo(gwvf, c.gwvf)
			addTo(gwg, c.gwg)
			addTo(gwvg, c.gwvg)
		}
	}
	if s.grad {
		addTo(s.gsm, m.prevSm)
		addTo(s.gsTil, m.prevTil)
	}
	return F.sum()
}

func addTo(dst, src []float64) {
	for i, v := range src {
		dst[i] += v
	}
}

// runChunk evaluates the time steps of block c.
func (m *Model) runChunk(c *chunk, s *stepArgs) {
	d, P := m.Cfg.D, m.P
	c.F = kahan{}
	clear(c.obsE)
	clear(c.stE)
	if s.grad {
		clear(c.gwf)
		clear(c.gwvf)
		clear(c.gwg)
		clear(c.gwvg)
	}
	for t := c.a; t < c.b; t++ {
		// Observations, eq. (102).
		st, vt := s.sm[t*d:(t+1)*d], s.sTil[t*d:(t+1)*d]
		c.pf.forward(st, vt, c.xm, c.xv)
		var ft float64
		for i := range P {
			r := m.X[t*P+i] - c.xm[i]
			e := r*r + c.xv[i]
			c.obsE[i] += e
			ft += 0.5*log2pi + m.VnMean[i] + 0.5*e*s.psiN[i]
			c.gxm[i], c.gxv[i] = -r*s.psiN[i], 0.5*s.psiN[i]
		}
		c.F.add(ft)
		if s.grad {
			c.pf.backward(st, vt, c.gxm, c.gxv, nil, s.gsm[t*d:(t+1)*d], s.gsTil[t*d:(t+1)*d])
		}
		if !m.Cfg.Dynamic || t == 0 {
			continue
		}
		// State transition t−1 → t, eq. (103) with h = s + g (eq. 34).
		sp, vp := s.sm[(t-1)*d:t*d], s.sTil[(t-1)*d:t*d]
		c.pg.forward(sp, vp, c.hm, c.hv)
		ft = 0
		clear(c.gJ)
		for i := range d {
			j := t*d + i
			e := s.sm[j] - c.hm[i]
			jii := c.pg.jx[i*d+i]
			br := m.Breve[j]
			// E(s − h)² = (s̄ − h̄)² + s̃ + h̃ − 2 Cov(s, h).
			eb := e*e + s.sTil[j] + c.hv[i] - 2*jii*br*vp[i]
			c.stE[i] += eb
			ft += 0.5*log2pi + m.VmMean[i] + 0.5*eb*s.psiM[i]
			if s.grad {
				s.gsm[j] += e * s.psiM[i]
				c.ghm[i], c.ghv[i] = -e*s.psiM[i], 0.5*s.psiM[i]
				c.gJ[i*d+i] = -br * vp[i] * s.psiM[i]
				s.gsTil[j] += 0.5 * s.psiM[i]
				m.prevTil[(t-1)*d+i] -= jii * br * s.psiM[i]
				m.direct[j] = -jii * vp[i] * s.psiM[i]
			}
		}
		c.F.add(ft)
		if s.grad {
			c.pg.backward(sp, vp, c.ghm, c.ghv, c.gJ, m.prevSm[(t-1)*d:t*d], m.prevTil[(t-1)*d:t*d])
		}
	}
	if s.grad {
		c.pf.addWeightGrad(c.gwf, c.gwvf)
		if m.Cfg.Dynamic {
			c.pg.addWeightGrad(c.gwg, c.gwvg)
		}
	}
}

// psi returns e^{2ṽ − 2v̄} for each log-std with q = N(v̄, ṽ): E e^{−2v}, the expected precision (eq. 101).
func psi(vm, vv []float64) []float64 {
	out := make([]float64, len(vm))
	for i := range vm {
		out[i] = math.Exp(2*vv[i] - 2*vm[i])
	}
	return out
}

// lastEval is the point (means, every other posterior parameter and the data) of the last evaluation and its F, so that
// Update can take F and the squared-error sums from the evaluation the line search made at the accepted point
// instead of repeating it, and Grad can take the gradient of Update's last evaluation (grad: it wrote Model.grad).
type lastEval struct {
	x, state []float64
	F        float64
	ok, grad bool
}

func (l *lastEval) remember(x []float64, parts [][]float64, F float64, grad bool) {
	l.x = append(l.x[:0], x...)
	l.state = l.state[:0]
	for _, v := range parts {
		l.state = append(l.state, v...)
	}
	l.F, l.ok, l.grad = F, true, grad
}

// at reports whether the last evaluation was at x with the state parts.
func (l *lastEval) at(x []float64, parts [][]float64) bool {
	if !l.ok || !sameBits(l.x, x) {
		return false
	}
	rest := l.state
	for _, v := range parts {
		if len(rest) < len(v) || !sameBits(rest[:len(v)], v) {
			return false
		}
		rest = rest[len(v):]
	}
	return len(rest) == 0
}

func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}
