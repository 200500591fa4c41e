package sggmc

import (
	"math"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// GMC is geodesic Monte Carlo (Byrne & Girolami 2013) on a product of spheres: per sample a fresh
// velocity v ~ Λ(x)𝒩(0, I), L leapfrog steps whose drift is the exact geodesic flow, and a Metropolis–Hastings test
// on H = U(x) + ½‖v‖² per chain. A non-finite energy is a rejection (a test "r < 1 && u > r" would
// accept a NaN ratio).
type GMC struct {
	b      backend.Backend
	tgt    Energy
	eps    float64
	L      int
	K, n   int
	x, v   *T
	x0     *T
	grad   *T
	kin    *T
	noise  noiseStream
	unif   rng.Counter
	u0, u1 []float64
	steps  uint64
	acc    []int
	tries  int
	mem    scratch
}

// NewGMC starts GMC chains at x0 (batch×K×n, unit rows, a tensor of b; copied) with step eps and L leapfrog steps
// per sample.
func NewGMC(b backend.Backend, tgt Energy, x0 *T, eps float64, L int, seed, stream uint64) (*GMC, error) {
	if !(eps > 0) || math.IsInf(eps, 0) || L < 1 {
		return nil, run.ConfigErrorf("sggmc.gmc", "eps", "step %v, L = %d: want a positive finite step and L ≥ 1", eps, L)
	}
	m, err := geometry(nil, x0)
	if err != nil {
		return nil, err
	}
	if err := checkPoints(b, m, x0); err != nil {
		return nil, err
	}
	batch, K, n := x0.Batch(), x0.Rows(), x0.Cols()
	g := &GMC{b: b, tgt: tgt, eps: eps, L: L, K: K, n: n, mem: scratch{b: b},
		noise: noiseStream{c: rng.Counter{Seed: seed, Stream: stream}},
		unif:  rng.Counter{Seed: seed, Stream: stream ^ 0x5bd1e995<<32},
		u0:    make([]float64, batch), u1: make([]float64, batch), acc: make([]int, batch)}
	for _, p := range []struct {
		t    **T
		r, c int
	}{{&g.x, K, n}, {&g.v, K, n}, {&g.x0, K, n}, {&g.grad, K, n}, {&g.kin, 1, 1}} {
		if *p.t, err = g.mem.alloc(batch, p.r, p.c); err != nil {
			g.Close()
			return nil, err
		}
	}
	if err := b.Copy(g.x, x0); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// Close frees the backend tensors.
func (g *GMC) Close() { g.mem.free() }

// X returns the current points.
func (g *GMC) X() *T { return g.x }

// AcceptRate returns the fraction of accepted proposals over all chains so far.
func (g *GMC) AcceptRate() float64 {
	if g.tries == 0 {
		return math.NaN()
	}
	s := 0
	for _, a := range g.acc {
		s += a
	}
	return float64(s) / float64(g.tries*len(g.acc))
}

// energy writes H = U(x) + ½‖v‖² per chain into h.
func (g *GMC) energy(h []float64) error {
	if err := g.tgt.U(g.b, h, g.x); err != nil {
		return err
	}
	if err := g.b.Reduce(g.kin, backend.ReduceSumSq, backend.AxisAll, g.v); err != nil {
		return err
	}
	k := tensor.NewHost(len(h), 1, 1)
	if err := g.b.Download(k, g.kin); err != nil {
		return err
	}
	for i := range h {
		h[i] += k.At(i, 0, 0) / 2
	}
	return nil
}

// kick sets v ← Λ(x)(v − h∇U(x)).
func (g *GMC) kick(h float64) error {
	if err := g.tgt.GradU(g.b, g.grad, g.x, g.steps); err != nil {
		return err
	}
	g.steps++
	if err := g.b.Axpby(g.v, -h, g.grad, 1, g.v); err != nil {
		return err
	}
	return backend.SphereProject(g.b, g.v, g.x, g.v)
}

// Sample draws one GMC sample for every chain. A target that is a SampleHook is told first (e.g. to redraw the
// latent θ that its potential holds fixed, as in the GMC baselines of the spherical admixture model, §5.3).
func (g *GMC) Sample() error {
	b := g.b
	if h, ok := g.tgt.(SampleHook); ok {
		if err := h.BeginSample(b, g.x, g.tries); err != nil {
			return err
		}
	}
	if err := b.Copy(g.x0, g.x); err != nil {
		return err
	}
	if err := g.noise.fill(b, g.v); err != nil {
		return err
	}
	if err := backend.SphereProject(b, g.v, g.x, g.v); err != nil {
		return err
	}
	if err := g.energy(g.u0); err != nil {
		return err
	}
	for l := 0; l < g.L; l++ {
		h := g.eps
		if l == 0 {
			h = g.eps / 2
		}
		if err := g.kick(h); err != nil {
			return err
		}
		if err := backend.SphereFlow(b, g.x, g.v, g.eps); err != nil {
			return err
		}
	}
	if err := g.kick(g.eps / 2); err != nil {
		return err
	}
	if err := g.energy(g.u1); err != nil {
		return err
	}
	batch := len(g.u0)
	rm := tensor.NewHost(batch, 1, 1)
	for i := 0; i < batch; i++ {
		u := g.unif.Uniform(uint64(i))
		dh := g.u0[i] - g.u1[i]
		if !math.IsNaN(dh) && !math.IsInf(g.u1[i], 0) && math.Log(u) < dh {
			g.acc[i]++
		} else {
			rm.Set(i, 0, 0, 1)
		}
	}
	g.unif = g.unif.Advance(batch)
	g.tries++
	// Rejected chains get their previous state back by a copy (exact, and safe when the proposal is NaN).
	for i := 0; i < batch; i++ {
		if rm.At(i, 0, 0) == 1 {
			if err := b.Copy(g.x.Batches(i, i+1), g.x0.Batches(i, i+1)); err != nil {
				return err
			}
		}
	}
	return nil
}
