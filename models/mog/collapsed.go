package mog

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/rng"
)

// Collapsed is the MoG free energy as a function of x = (log r (N×K, row-major), m (K×D)) with α, β, ν, W at their
// conditional optima at every point: VB-EM inside the line search (App. B.3). With the default (exact) forms of
// the conditional optima (see the package comment) its gradient is the partial gradient (81)–(84) by the envelope theorem. It implements
// rcg.Objective, rcg.Stepper (log-domain softmax steps, eqs. 85–86) and rcg.Sizer (n = N(K−1) + KD).
type Collapsed struct {
	M    *Model
	post *Post
}

// NewCollapsed returns the collapsed objective of m.
func NewCollapsed(m *Model) *Collapsed { return &Collapsed{M: m, post: NewPost(m.K, m.D)} }

// Dim returns NK + KD.
func (c *Collapsed) Dim() int { return c.M.N*c.M.K + c.M.K*c.M.D }

// NumFree returns N(K−1) + KD, the n of the √n restart rule (§6.2).
func (c *Collapsed) NumFree() int { return c.M.N*(c.M.K-1) + c.M.K*c.M.D }

func (c *Collapsed) split(x []float64) (logr, mu []float64) {
	nk := c.M.N * c.M.K
	return x[:nk], x[nk:]
}

// Value returns F(x) with the EM parameters at their conditional optima.
func (c *Collapsed) Value(x []float64) float64 {
	logr, mu := c.split(x)
	c.M.stats(logr, mu)
	c.M.mstepFromStats(c.post, mu)
	return c.M.energyFromStats(logr, mu, c.post)
}

// Grad writes the Euclidean gradient with respect to (γ = log r, m) into g and returns F.
func (c *Collapsed) Grad(g, x []float64) float64 {
	logr, mu := c.split(x)
	m := c.M
	m.stats(logr, mu)
	m.mstepFromStats(c.post, mu)
	F := m.energyFromStats(logr, mu, c.post)
	if math.IsNaN(F) || !m.phi(m.scratch.phi, logr, mu, c.post) {
		return math.NaN()
	}
	gg, gm := c.split(g)
	m.gradFromPhi(gg, gm, nil, nil, mu, c.post)
	return F
}

// NatGrad writes the closed-form natural gradients (φ − φ̄ for γ, §2.5; the W-free mean form, §2.6) using the
// quantities of the preceding Grad call at x.
func (c *Collapsed) NatGrad(dst, g, x []float64) {
	_, mu := c.split(x)
	m := c.M
	ng, nm := c.split(dst)
	gg, gm := c.split(g)
	m.gradFromPhi(gg, gm, ng, nm, mu, c.post)
}

// Step writes x + αp with the responsibilities renormalised in the log domain (86): ℓ' = u − LSE(u),
// u = max(ℓ + αp, max(ℓ + αp) − 700) (against underflow of exp(ℓ)).
func (c *Collapsed) Step(dst, x, p []float64, alpha float64) {
	N, K := c.M.N, c.M.K
	nk := N * K
	parallelRows(N, nk, func(lo, hi int) {
		for n := lo * K; n < hi*K; n += K {
			row := dst[n : n+K]
			mx := math.Inf(-1)
			nan := false
			for k := range K {
				v := x[n+k] + alpha*p[n+k]
				row[k] = v
				if v > mx {
					mx = v
				}
				nan = nan || v != v
			}
			if nan { // math.Max's rule: a NaN in the row makes the floor NaN, and the row NaN
				mx = math.NaN()
			}
			for k := range K {
				if floor := mx - 700; !(row[k] >= floor) && row[k] == row[k] {
					row[k] = floor
				}
			}
		}
		normaliseRows(dst[lo*K:hi*K], K)
	})
	for i := nk; i < len(x); i++ {
		dst[i] = x[i] + alpha*p[i]
	}
}

// Post returns the EM parameters of the last evaluation.
func (c *Collapsed) Post() *Post { return c.post }

// Synthetic draws N points of the paper's 2-D test data (§6.2): five spherical Gaussians with covariance s2·I
// (0.03 in the paper), equal weights, centred at (0,0) and (±R, ±R); the component index is uniform.
func Synthetic(R float64, N int, s2 float64, seed uint64) []float64 {
	src := rand.New(rng.NewSource(seed, 0x6d6f67))
	centres := [5][2]float64{{0, 0}, {R, R}, {R, -R}, {-R, R}, {-R, -R}}
	sd := math.Sqrt(s2)
	X := make([]float64, 2*N)
	for n := range N {
		c := centres[src.IntN(5)]
		X[2*n] = c[0] + sd*src.NormFloat64()
		X[2*n+1] = c[1] + sd*src.NormFloat64()
	}
	return X
}

// Init returns the starting point of §6.2 as an x for Collapsed: m_k ~ N(0, 0.16I), and responsibilities from
// one VB-E step (62) with α_k = 1, β_k = 10, ν_k = D, W_k = (4/D)I (the initial r is unspecified by the paper;
// this is our choice). All methods start from it.
func Init(m *Model, seed uint64) ([]float64, error) {
	src := rand.New(rng.NewSource(seed, 0x696e6974))
	x := make([]float64, m.N*m.K+m.K*m.D)
	logr, mu := x[:m.N*m.K], x[m.N*m.K:]
	for i := range mu {
		mu[i] = 0.4 * src.NormFloat64()
	}
	if err := m.EStep(logr, mu, NewPost(m.K, m.D)); err != nil {
		return nil, err
	}
	return x, nil
}

// VBEMResult is the outcome of VBEM.
type VBEMResult struct {
	LogR, Mu []float64
	Post     *Post
	F        float64
	run.Result
}

// VBEM runs the VB-EM comparator (61)–(69) from x (as for Collapsed): each iteration is an M-step (α, β, ν, W and
// the means (68)) followed by an E-step, and F is evaluated after it. It stops when |ΔF| < s.Tol for s.Patience
// consecutive iterations, or when F ≤ s.Target if s.UseTarget. The recorder gets Objective = −F. With
// ctl.CheckpointEvery the state (log r, m, F, the calm count and the iteration) is saved every so many iterations
// while the run goes on, and with ctl.Resume a call continues from ctl.CheckpointPath (x is then only checked for
// its length), bit for bit as the uninterrupted run; the file must exist (else an error wrapping run.ErrCheckpoint).
// Bad settings and an x of the wrong length are errors wrapping run.ErrConfig.
func VBEM(m *Model, x []float64, s VBEMSettings, ctl run.Control) (*VBEMResult, error) {
	if err := ctl.Validate(); err != nil {
		return nil, err
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	if len(x) != m.N*m.K+m.K*m.D {
		return nil, run.ConfigErrorf("mog", "x", "length %d, want N·K + K·D = %d", len(x), m.N*m.K+m.K*m.D)
	}
	patience := s.patience()
	logr := append([]float64(nil), x[:m.N*m.K]...)
	mu := append([]float64(nil), x[m.N*m.K:]...)
	post := NewPost(m.K, m.D)
	var fPrev float64
	calm, done := 0, 0
	var ck *vbemCheckpoint
	if ctl.Resume {
		var err error
		if ck, err = loadVBEM(ctl.CheckpointPath, vbemCheckpointMethod, 1, m.N, m.K, m.D, false); err != nil {
			return nil, err
		}
	}
	if ck != nil {
		r := ck.Runs[0]
		copy(logr, r.LogR)
		copy(mu, r.Mu)
		fPrev, calm, done = r.FPrev, r.Calm, r.Iters
		m.MStep(post, logr, mu) // the result's EM parameters should the cap allow no further iteration
	} else {
		m.MStep(post, logr, mu)
		fPrev = m.FreeEnergy(logr, mu, post)
		if !run.Finite(fPrev) {
			return nil, fmt.Errorf("%w: free energy %v at the start", ErrBadInput, fPrev)
		}
	}
	loop := ctl.Start(100000, done)
	for loop.Next() {
		m.MeanStep(mu, logr)
		m.MStep(post, logr, mu)
		if err := m.EStep(logr, mu, post); err != nil {
			loop.Fail(err)
			break
		}
		f := m.FreeEnergy(logr, mu, post)
		if !run.Finite(f) {
			loop.Finish(run.NotFinite)
			break
		}
		if math.Abs(f-fPrev) < s.Tol {
			calm++
		} else {
			calm = 0
		}
		fPrev = f
		loop.Report(run.Record{Objective: -f, Smoothed: math.NaN(), GradNorm: math.NaN(), Step: math.NaN(),
			Extra: map[string]float64{"F": f}})
		if calm >= patience || (s.UseTarget && f <= s.Target) {
			loop.Finish(run.Converged)
			break
		}
		if loop.CheckpointDue() {
			c := vbemCheckpoint{N: m.N, K: m.K, D: m.D, Runs: []vbemRun{{LogR: logr, Mu: mu, FPrev: fPrev, Calm: calm,
				Iters: loop.Iter()}}}
			err := run.SaveCheckpoint(ctl.CheckpointPath, vbemCheckpointMethod, vbemCheckpointVersion, c)
			if err != nil {
				loop.Fail(err)
			}
		}
	}
	res := loop.Result()
	return &VBEMResult{LogR: logr, Mu: mu, Post: post, F: fPrev, Result: res}, res.Err
}
