package rcg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/rng"
)

// toy is the closed-form free energy of §6.1 (Fig. 1) for p(x, y) ∝ exp[−9(xy − 1)² − x² − y²] with a diagonal
// Gaussian q: x = (x̄, ȳ) by gradient steps, variances (x̃, ỹ) by the fixed point (13) in Update.
type toy struct{ vx, vy float64 }

func (o *toy) Dim() int { return 2 }
func (o *toy) Value(x []float64) float64 {
	a, b := x[0], x[1]
	return 9*((a*a+o.vx)*(b*b+o.vy)-2*a*b+1) + a*a + o.vx + b*b + o.vy - 0.5*math.Log(o.vx) - 0.5*math.Log(o.vy)
}
func (o *toy) Grad(g, x []float64) float64 {
	a, b := x[0], x[1]
	g[0] = 18*a*(b*b+o.vy) - 18*b + 2*a
	g[1] = 18*b*(a*a+o.vx) - 18*a + 2*b
	return o.Value(x)
}
func (o *toy) NatGrad(dst, g, x []float64) { diagNatGrad(dst, []float64{o.vx, o.vy}, g) }
func (o *toy) Update(x []float64) error {
	// (13): x̃ = 1/(2∂C_p/∂x̃) = 1/(18(ȳ² + ỹ) + 2), then ỹ likewise (Gauss–Seidel).
	o.vx = 1 / (18*(x[1]*x[1]+o.vy) + 2)
	o.vy = 1 / (18*(x[0]*x[0]+o.vx) + 2)
	return nil
}
func (o *toy) State() []float64 { return []float64{o.vx, o.vy} }
func (o *toy) SetState(s []float64) error {
	if len(s) != 2 {
		return errors.New("toy: bad state")
	}
	o.vx, o.vy = s[0], s[1]
	return nil
}

// Test 12: RCG from (0.1, 0.2) with unit variances reaches (±0.912871, ±0.912871), variances 0.0555556 and
// F = 5.779261 (§6.1, closed form √(5/6), 1/18), in fewer gradient evaluations than GD.
func TestToyOptimum(t *testing.T) {
	var evals [2]int
	for i, m := range []Method{RCG, GD} {
		o := &toy{1, 1}
		res, err := Minimize(context.Background(), o, []float64{0.1, 0.2}, Settings{Method: m, PowellBeale: 0.2,
			Tol: 1e-13, Control: run.Control{MaxIter: 100000}})
		if err != nil {
			t.Fatal(err)
		}
		evals[i] = res.GEvals
		want := math.Sqrt(5.0 / 6)
		if math.Abs(math.Abs(res.X[0])-want) > 1e-6 || math.Abs(res.X[1]-res.X[0]) > 1e-6 {
			t.Errorf("%v: mean %v, want ±%v", m, res.X, want)
		}
		if math.Abs(o.vx-1.0/18) > 1e-6 || math.Abs(o.vy-1.0/18) > 1e-6 {
			t.Errorf("%v: variances %v %v, want 0.0555556", m, o.vx, o.vy)
		}
		if math.Abs(res.F-5.779261) > 1e-6 {
			t.Errorf("%v: F = %.8f, want 5.779261", m, res.F)
		}
		t.Logf("%v: %d iterations, %d gradient and %d F evaluations, F = %.9f, reason %v", m, res.Iters, res.GEvals, res.FEvals, res.F, res.Reason)
	}
	if evals[0] >= evals[1] {
		t.Errorf("RCG used %d gradient evaluations, GD %d: want fewer", evals[0], evals[1])
	}
}

// gaussTarget is −E_q log N(θ; μ*, Λ⁻¹) − H[q] for a diagonal Gaussian q (test 10): F = ½tr(Λ(diag ṽ + (μ − μ*)
// (μ − μ*)ᵀ)) − ½Σ log ṽ_i, with ṽ by the fixed point (13) ṽ_i = 1/Λ_ii.
type gaussTarget struct {
	lam    *mat.SymDense
	mu     []float64
	v      []float64
	nUpd   int
	fixedG bool
}

func (o *gaussTarget) Dim() int { return len(o.mu) }
func (o *gaussTarget) Value(x []float64) float64 {
	n := len(x)
	var f float64
	for i := range n {
		if !o.fixedG { // with frozen variances the entropy and trace terms are constants: drop them so that F → 0
			f += 0.5 * o.lam.At(i, i) * o.v[i]
			f -= 0.5 * math.Log(o.v[i])
		}
		for j := range n {
			f += 0.5 * (x[i] - o.mu[i]) * o.lam.At(i, j) * (x[j] - o.mu[j])
		}
	}
	return f
}
func (o *gaussTarget) Grad(g, x []float64) float64 {
	n := len(x)
	for i := range n {
		g[i] = 0
		for j := range n {
			g[i] += o.lam.At(i, j) * (x[j] - o.mu[j])
		}
	}
	return o.Value(x)
}
func (o *gaussTarget) NatGrad(dst, g, x []float64) { diagNatGrad(dst, o.v, g) }
func (o *gaussTarget) Update(x []float64) error {
	o.nUpd++
	if o.fixedG {
		return nil
	}
	for i := range o.v {
		o.v[i] = 1 / o.lam.At(i, i) // 1/(2∂C_p/∂ṽ_i) with ∂C_p/∂ṽ_i = Λ_ii/2
	}
	return nil
}

// randRotation returns the Q factor of a Gaussian n×n matrix.
func randRotation(r *rand.Rand, n int) *mat.Dense {
	a := mat.NewDense(n, n, nil)
	for i := range n {
		for j := range n {
			a.Set(i, j, r.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(a)
	var q mat.Dense
	qr.QTo(&q)
	return &q
}

func newGaussTarget(n int, cond float64, seed uint64) *gaussTarget {
	r := newRand(seed)
	// Λ = Q diag(λ) Qᵀ with λ log-spaced over [1, cond].
	q := randRotation(r, n)
	lam := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			var s float64
			for k := range n {
				s += q.At(i, k) * q.At(j, k) * math.Pow(cond, float64(k)/float64(n-1))
			}
			lam.SetSym(i, j, s)
		}
	}
	mu := make([]float64, n)
	v := make([]float64, n)
	for i := range n {
		mu[i] = r.NormFloat64()
		v[i] = 1
	}
	return &gaussTarget{lam: lam, mu: mu, v: v}
}

// Test 10: with the fixed point (13) the solution for a Gaussian target and diagonal q is θ̄ = μ*, ṽ_i = 1/Λ_ii
// (to 1e-8), and ∂F/∂ṽ = 0 after the update.
func TestFixedPointVariances(t *testing.T) {
	o := newGaussTarget(8, 50, 10)
	res, err := Minimize(context.Background(), o, make([]float64, 8), Settings{PowellBeale: 0.2,
		LS: LineSearch{Refine: 3}, Tol: 1e-15, Patience: 3, Control: run.Control{MaxIter: 500}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range o.mu {
		if math.Abs(res.X[i]-o.mu[i]) > 1e-8 {
			t.Errorf("mean[%d] = %v, want %v", i, res.X[i], o.mu[i])
		}
		want := 1 / o.lam.At(i, i)
		if math.Abs(o.v[i]-want) > 1e-8 {
			t.Errorf("variance[%d] = %v, want %v", i, o.v[i], want)
		}
		// ∂F/∂ṽ_i = Λ_ii/2 − 1/(2ṽ_i).
		if d := o.lam.At(i, i)/2 - 1/(2*o.v[i]); math.Abs(d) > 1e-10 {
			t.Errorf("∂F/∂ṽ[%d] = %v after the update", i, d)
		}
	}
}

// newQuad is a quadratic whose Hessian H = V^{-1/2} Q diag(λ) Qᵀ V^{-1/2} makes the preconditioned operator
// G⁻¹H (G = V⁻¹, the fixed diagonal metric) similar to Q diag(λ) Qᵀ: λ takes 5 distinct values over [1, 1e4], so
// G⁻¹H has condition number 1e4, while the Euclidean Hessian is worse still (V spans [0.1, 10]).
func newQuad(n int, seed uint64) *gaussTarget {
	o := newGaussTarget(n, 2, seed) // for μ* and a random rotation source
	r := newRand(seed + 100)
	q := randRotation(r, n)
	for i := range n {
		o.v[i] = math.Pow(10, -1+2*r.Float64())
	}
	lam := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			var s float64
			for k := range n {
				s += q.At(i, k) * q.At(j, k) * math.Pow(10, float64(k%5))
			}
			lam.SetSym(i, j, s/math.Sqrt(o.v[i]*o.v[j]))
		}
	}
	o.lam = lam
	o.fixedG = true
	return o
}

func gradNorm(o *gaussTarget, x []float64) float64 {
	g := make([]float64, len(x))
	o.Grad(g, x)
	return math.Sqrt(dotF(g, g))
}

// Test 11: on a quadratic with a fixed diagonal metric and exact line search (Refine), RCG — then linear CG
// preconditioned by G⁻¹ — reaches ‖∇‖ < 1e-10 in at most n iterations (n = 30; G⁻¹H has 5 distinct eigenvalues);
// PR and FR give the same iterates; RG, with condition number 1e4, is still far from it after 10n iterations.
func TestQuadraticCG(t *testing.T) {
	const n = 30
	ls := LineSearch{Refine: 4}
	x0 := make([]float64, n)
	o := newQuad(n, 11)
	res, err := Minimize(context.Background(), o, x0, Settings{LS: ls, Control: run.Control{MaxIter: n}})
	if err != nil {
		t.Fatal(err)
	}
	gn := gradNorm(o, res.X)
	if gn >= 1e-10 {
		t.Errorf("RCG after %d ≤ n iterations: ‖∇‖ = %.3g, want < 1e-10", res.Iters, gn)
	}
	t.Logf("RCG: ‖∇‖ = %.3g after %d iterations (n = %d, %s)", gn, res.Iters, n, res.Reason)
	// PR = FR under exact line search: compare the iterates after 4 iterations (before convergence).
	pr, err1 := Minimize(context.Background(), newQuad(n, 11), x0, Settings{Beta: PolakRibiere, LS: ls,
		Control: run.Control{MaxIter: 4}})
	fr, err2 := Minimize(context.Background(), newQuad(n, 11), x0, Settings{Beta: FletcherReeves, LS: ls,
		Control: run.Control{MaxIter: 4}})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	for i := range pr.X {
		if math.Abs(pr.X[i]-fr.X[i]) > 1e-7*(1+math.Abs(pr.X[i])) {
			t.Errorf("PR and FR iterates differ at %d: %v vs %v", i, pr.X[i], fr.X[i])
		}
	}
	ro := newQuad(n, 11)
	rg, err := Minimize(context.Background(), ro, x0, Settings{Method: RG, LS: ls,
		Control: run.Control{MaxIter: 10 * n}})
	if err != nil {
		t.Fatal(err)
	}
	rgn := gradNorm(ro, rg.X)
	t.Logf("RG: ‖∇‖ = %.3g after %d iterations", rgn, rg.Iters)
	if rgn < 1e-6 {
		t.Errorf("RG reached ‖∇‖ = %.3g in %d iterations; expected far slower convergence", rgn, rg.Iters)
	}
}

// Test 13: every accepted step decreases F, for RCG, CG, RG, GD and Old, on the toy problem (with its fixed-point
// variance updates, F is evaluated after the update and must not increase over the step).
func TestMonotoneDescent(t *testing.T) {
	for _, m := range []Method{RCG, CG, RG, GD, Old} {
		for _, s := range []Search{Parabolic, Unit} {
			o := &toy{1, 1}
			var fs []float64
			_, err := Minimize(context.Background(), o, []float64{0.1, 0.2}, Settings{Method: m, Search: s,
				PowellBeale: 0.2, Tol: 1e-12, Control: run.Control{MaxIter: 3000,
					Recorder: run.Func(func(r run.Record) { fs = append(fs, r.Extra["F"]) })}})
			if err != nil {
				t.Fatal(err)
			}
			// The update between steps lowers F too (a conditional optimum), so the recorded sequence is monotone.
			for i := 1; i < len(fs); i++ {
				if fs[i] > fs[i-1]+1e-12*math.Abs(fs[i-1]) {
					t.Errorf("%v/%v: F rose at iteration %d: %.15g → %.15g", m, s, i, fs[i-1], fs[i])
					break
				}
			}
		}
	}
}

// Test 13 (restart rule): with RestartEvery = k the direction is reset (β = 0) exactly at iterations 0, k, 2k, …
// unless Powell–Beale or the descent safeguard also fires; with those off and PR+ replaced by FR (β > 0 always),
// β = 0 exactly on the multiples of k.
func TestRestartEvery(t *testing.T) {
	const k = 4
	o := newGaussTarget(12, 100, 13)
	var betas []float64
	_, err := Minimize(context.Background(), o, make([]float64, 12), Settings{Beta: FletcherReeves, RestartEvery: k,
		Control: run.Control{MaxIter: 25, Recorder: run.Func(func(r run.Record) {
			betas = append(betas,
				r.Extra["beta"])
		})}})
	if err != nil {
		t.Fatal(err)
	}
	if len(betas) < 13 {
		t.Fatalf("only %d iterations", len(betas))
	}
	for i, b := range betas {
		if (i%k == 0) != (b == 0) {
			t.Errorf("iteration %d: β = %v (restart expected: %v)", i, b, i%k == 0)
		}
	}
}

// Powell–Beale: on an objective whose metric changes a lot between steps, runs with PB count restarts exactly
// when the recorded test fires; here we check that PB = 0.2 restarts more often than none.
func TestPowellBealeRestarts(t *testing.T) {
	count := func(pb float64) int {
		o := &toy{1, 1}
		res, err := Minimize(context.Background(), o, []float64{0.1, 0.2}, Settings{PowellBeale: pb, Tol: 1e-14,
			Control: run.Control{MaxIter: 200}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Restarts
	}
	if a, b := count(0.2), count(0); a <= b {
		t.Errorf("restarts with Powell–Beale %d, without %d", a, b)
	}
}

// nanWall has its minimum at x = 2 but is NaN for x > 1.5: the line search must reject the NaN trials, count them,
// and end at a finite point.
type nanWall struct{}

func (nanWall) Dim() int { return 1 }
func (nanWall) Value(x []float64) float64 {
	if x[0] > 1.5 {
		return math.NaN()
	}
	return (x[0] - 2) * (x[0] - 2)
}
func (w nanWall) Grad(g, x []float64) float64 { g[0] = 2 * (x[0] - 2); return w.Value(x) }
func (nanWall) NatGrad(dst, g, x []float64)   { dst[0] = g[0] / 2 }

func TestNaNRejected(t *testing.T) {
	for _, s := range []Search{Parabolic, Unit} {
		var rejected float64
		res, err := Minimize(context.Background(), nanWall{}, []float64{0}, Settings{Search: s, Tol: 1e-12,
			Control: run.Control{MaxIter: 200,
				Recorder: run.Func(func(r run.Record) { rejected = r.Extra["rejected"] })}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Rejected == 0 || rejected == 0 {
			t.Errorf("search %v: no rejected trials counted (%d, recorder %v)", s, res.Rejected, rejected)
		}
		if !(res.X[0] <= 1.5) || math.IsNaN(res.F) {
			t.Errorf("search %v: state poisoned: x = %v, F = %v", s, res.X, res.F)
		}
		if res.X[0] < 1.4 {
			t.Errorf("search %v: stopped at %v, want near the wall 1.5", s, res.X[0])
		}
	}
}

type badStart struct{ nanWall }

func (badStart) Value(x []float64) float64     { return math.NaN() }
func (b badStart) Grad(g, x []float64) float64 { g[0] = 0; return math.NaN() }

func TestBadInput(t *testing.T) {
	if _, err := Minimize(context.Background(), badStart{}, []float64{0}, Settings{}); !errors.Is(err, ErrNotFinite) {
		t.Errorf("NaN F at the start: err = %v, want ErrNotFinite", err)
	}
	if _, err := Minimize(context.Background(), nanWall{}, []float64{math.Inf(1)}, Settings{}); !errors.Is(err,
		ErrBadInput) {
		t.Errorf("Inf x0: err = %v", err)
	}
	if _, err := Minimize(context.Background(), nanWall{}, []float64{0, 1}, Settings{}); !isConfigError(err, "x0") {
		t.Errorf("wrong length: err = %v, want a run.ConfigError for x0", err)
	}
	// Settings that cannot work are *run.ConfigError values that name the field; zero means the default.
	nan := math.NaN()
	for _, c := range []struct {
		s    Settings
		name string
	}{
		{Settings{Tol: nan}, "Tol"},
		{Settings{Tol: -1}, "Tol"},
		{Settings{PowellBeale: nan}, "PowellBeale"},
		{Settings{Patience: -1}, "Patience"},
		{Settings{Target: nan, UseTarget: true}, "Target"},
		{Settings{Method: 9}, "Method"},
		{Settings{Method: -1}, "Method"},
		{Settings{Beta: PolakRibierePlus + 1}, "Beta"},
		{Settings{RestartEvery: SqrtN - 1}, "RestartEvery"},
		{Settings{Search: Unit + 1}, "Search"},
		{Settings{Control: run.Control{MaxIter: -1}}, "MaxIter"},
		{Settings{Control: run.Control{Resume: true}}, "CheckpointPath"},
		{Settings{LS: LineSearch{C1: 1}}, "C1"},
		{Settings{LS: LineSearch{C1: nan}}, "C1"},
		{Settings{LS: LineSearch{Shrink: 2}}, "Shrink"},
		{Settings{LS: LineSearch{Grow: 0.5}}, "Grow"},
		{Settings{LS: LineSearch{Backtrack: 1}}, "Backtrack"},
		{Settings{LS: LineSearch{Backtrack: -0.5}}, "Backtrack"},
		{Settings{LS: LineSearch{MaxBacktrack: -1}}, "MaxBacktrack"},
		{Settings{LS: LineSearch{MaxBacktrackSteepest: -3}}, "MaxBacktrackSteepest"},
		{Settings{LS: LineSearch{MaxExpand: -1}}, "MaxExpand"},
		{Settings{LS: LineSearch{Refine: -1}}, "Refine"},
		{Settings{LS: LineSearch{MinAlpha: 10, MaxAlpha: 1}}, "MinAlpha"},
		{Settings{LS: LineSearch{MaxAlpha: math.Inf(1)}}, "MaxAlpha"},
		{Settings{Method: Old, LS: LineSearch{OldUp: 0.9}}, "OldUp"},
		{Settings{Method: Old, LS: LineSearch{OldDown: 1.5}}, "OldDown"},
	} {
		_, err := Minimize(context.Background(), nanWall{}, []float64{0}, c.s)
		if !isConfigError(err, c.name) {
			t.Errorf("%+v: err = %v, want a run.ConfigError for %s", c.s, err, c.name)
		}
	}
	// The defaults and in-range values pass.
	valid := Settings{LS: LineSearch{C1: 0.45, Grow: 1.5, Shrink: 1, MaxBacktrack: 0}}
	if _, err := Minimize(context.Background(), nanWall{}, []float64{0}, withControl(valid,
		run.Control{MaxIter: 1})); err != nil {
		t.Errorf("valid settings: %v", err)
	}
}

// isConfigError reports whether err is a *run.ConfigError (wrapping run.ErrConfig) whose field ends in field.
func isConfigError(err error, field string) bool {
	var ce *run.ConfigError
	return errors.Is(err, run.ErrConfig) && errors.As(err, &ce) && strings.HasSuffix(ce.Field, field)
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Minimize(ctx, &toy{1, 1}, []float64{0.1, 0.2}, Settings{})
	if res == nil || res.Reason != run.Cancelled || !errors.Is(err, context.Canceled) {
		t.Errorf("reason %v, err %v", res.Reason, err)
	}
}

// Checkpoint/resume continues bit for bit, objective state (the fixed-point variances) and Old's multipliers
// included.
func TestCheckpointResume(t *testing.T) {
	for _, m := range []Method{RCG, Old} {
		path := filepath.Join(t.TempDir(), "ck")
		s := Settings{Method: m, PowellBeale: 0.2}
		full, err := Minimize(context.Background(), &toy{1, 1}, []float64{0.1, 0.2}, withControl(s,
			run.Control{MaxIter: 12}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Minimize(context.Background(), &toy{1, 1}, []float64{0.1, 0.2}, withControl(s,
			run.Control{MaxIter: 5, CheckpointEvery: 5, CheckpointPath: path})); err != nil {
			t.Fatal(err)
		}
		o := &toy{7, 7} // state must come from the checkpoint
		res, err := Minimize(context.Background(), o, []float64{9, 9}, withControl(s, run.Control{MaxIter: 12,
			CheckpointPath: path, Resume: true}))
		if err != nil {
			t.Fatal(err)
		}
		if res.Iters != 12 || res.X[0] != full.X[0] || res.X[1] != full.X[1] || res.F != full.F || res.GEvals != full.GEvals {
			t.Errorf("%v: resumed run %v F=%v iters=%d ge=%d, full run %v F=%v ge=%d", m, res.X, res.F, res.Iters, res.GEvals, full.X, full.F, full.GEvals)
		}
		// Resume needs the file: a missing one is an error, not a fresh start.
		missing := run.Control{CheckpointPath: filepath.Join(t.TempDir(), "none"), Resume: true}
		_, err = Minimize(context.Background(), &toy{1, 1}, []float64{0.1, 0.2}, withControl(s, missing))
		if !errors.Is(err, run.ErrCheckpoint) || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%v: resume from a missing file: %v, want run.ErrCheckpoint and fs.ErrNotExist", m, err)
		}
		// A checkpoint of another method does not fit.
		other := withControl(Settings{Method: RG}, run.Control{CheckpointPath: path, Resume: true})
		if _, err := Minimize(context.Background(), &toy{1, 1}, []float64{0.1, 0.2}, other); !errors.Is(err,
			run.ErrCheckpoint) {
			t.Errorf("%v: checkpoint resumed as %v: %v, want run.ErrCheckpoint", m, other.Method, err)
		}
	}
}

// withControl returns s with the run control c.
func withControl(s Settings, c run.Control) Settings {
	s.Control = c
	return s
}

// The parabolic line search on a 1-D quadratic along p: the parabola through F(0), F'(0), F(α₀) is exact, so
// two evaluations give the minimiser when it lies in [0.1α₀, 4α₀]; outside, the clamp applies; a negative-curvature
// (here: linear) model expands ×2.
func TestLineSearchParabola(t *testing.T) {
	q := func(amin float64) func(a float64) float64 {
		return func(a float64) float64 { return (a - amin) * (a - amin) }
	}
	for _, c := range []struct{ amin, a0, want float64 }{{0.7, 1, 0.7}, {3, 1, 3}, {10, 1, 4}, {0.08, 1, 0.1}} {
		f := q(c.amin)
		o := &searcher{s: Settings{}, ls: LineSearch{}.withDefaults(Parabolic, RCG), xt: make([]float64, 1), res: &Result{}}
		o.obj = lineObj{f}
		a, fa, ok := o.search([]float64{0}, []float64{1}, f(0), -2*c.amin, c.a0, true)
		if !ok || math.Abs(a-c.want) > 1e-12 || math.Abs(fa-f(c.want)) > 1e-12 {
			t.Errorf("minimiser %v, α₀ %v: got α = %v (ok %v), want %v", c.amin, c.a0, a, ok, c.want)
		}
		if c.want == c.amin && o.res.FEvals != 2 {
			t.Errorf("minimiser %v: %d evaluations, want 2", c.amin, o.res.FEvals)
		}
	}
	// Linear decrease: expansion doubles α₀ three times.
	lin := func(a float64) float64 { return -a }
	o := &searcher{ls: LineSearch{}.withDefaults(Parabolic, RCG), xt: make([]float64, 1), res: &Result{}, obj: lineObj{lin}}
	if a, _, ok := o.search([]float64{0}, []float64{1}, 0, -1, 1, true); !ok || a != 8 {
		t.Errorf("linear: α = %v, want 8", a)
	}
	// Armijo failure then backtracking: F rises everywhere beyond 1e-3 except close to 0.
	bump := func(a float64) float64 { return -a + 1e4*a*a }
	o = &searcher{ls: LineSearch{}.withDefaults(Parabolic, RCG), xt: make([]float64, 1), res: &Result{}, obj: lineObj{bump}}
	a, fa, ok := o.search([]float64{0}, []float64{1}, 0, -1, 1, true)
	if !ok || !(fa <= 1e-4*a*-1) {
		t.Errorf("bump: α = %v, F = %v, ok %v: Armijo not met", a, fa, ok)
	}
}

// A steepest (−g̃) search backtracks up to MaxBacktrackSteepest = 40 times, a conjugate one 8, and past 8 a trial must
// lower F strictly. Along f(α) = (1 − sα)², a unit step overshoots the minimiser 1/s by s: with s = 1e7 the 8
// backtracks (to 0.25⁸ = 1.5e-5) fall short and only the steepest search succeeds; on an f that is F₀ near 0 and
// higher from α = 0.5, with a (false) negative slope, the steepest search makes all its evaluations (42 parabolic,
// 41 unit) and fails, although once c₁αF'₀ is below F₀'s rounding (from the 21st backtrack) plain Armijo would
// accept the unchanged F. The batched line search (lsState) must make the same trials and decisions.
func TestSteepestSearchBacktracksFar(t *testing.T) {
	ls := LineSearch{}.withDefaults(Parabolic, RCG)
	type outcome struct {
		a, f  float64
		ok    bool
		evals int
	}
	host := func(f func(float64) float64, d0 float64, search Search, steepest bool) outcome {
		o := &searcher{s: Settings{Search: search}, ls: LineSearch{}.withDefaults(search, RCG), xt: make([]float64, 1),
			res: &Result{}, obj: lineObj{f}}
		a, fa, ok := o.search([]float64{0}, []float64{1}, f(0), d0, 1, steepest)
		return outcome{a, fa, ok, o.res.FEvals}
	}
	batched := func(f func(float64) float64, d0 float64, search Search, steepest bool) outcome {
		var l lsState
		l.start(f(0), d0, 1, search == Unit, steepest)
		n := 0
		for l.stage != lsDone && n < 1000 {
			l.feed(f(l.trial), LineSearch{}.withDefaults(search, RCG))
			n++
		}
		if !l.ok {
			return outcome{0, 0, false, n}
		}
		return outcome{l.a, l.bestF, true, n}
	}
	for _, sc := range []float64{1e3, 1e5, 1e7} {
		f := func(a float64) float64 { return (1 - sc*a) * (1 - sc*a) }
		for _, search := range []Search{Parabolic, Unit} {
			for _, steepest := range []bool{false, true} {
				h, b := host(f, -2*sc, search, steepest), batched(f, -2*sc, search, steepest)
				name := fmt.Sprintf("s %g, search %d, steepest %v", sc, search, steepest)
				if h != b {
					t.Errorf("%s: host %+v, batched %+v", name, h, b)
				}
				wantOK := steepest || search == Parabolic && sc < 1e7
				if h.ok != wantOK || h.ok && !(h.f <= 1+ls.C1*h.a*(-2*sc)) {
					t.Errorf("%s: %+v, want ok = %v and Armijo", name, h, wantOK)
				}
			}
		}
	}
	flat := func(a float64) float64 { // F₀ = 1 up to α = 0.5, higher beyond: α₀ = 1 fails, then nothing decreases
		if a >= 0.5 {
			return 2
		}
		return 1
	}
	for _, search := range []Search{Parabolic, Unit} {
		h, b := host(flat, -1, search, true), batched(flat, -1, search, true)
		want := 2 + ls.MaxBacktrackSteepest // α₀ and the parabola's clamped point, then every backtrack
		if search == Unit {
			want = 1 + ls.MaxBacktrackSteepest
		}
		if h.ok || h.evals != want || h != b {
			t.Errorf("F flat near 0, search %d: host %+v, batched %+v; want a failure after %d evaluations", search, h, b,
				want)
		}
	}
}

// Minimize on F = ½cx² with a metric whose natural gradient is 1e7/c·g, a unit natural step 1e7 times too long:
// RCG reaches the minimum (the steepest search backtracks far enough) where the 8 backtracks of a conjugate search
// stopped it at x₀ as "converged".
func TestMisscaledMetric(t *testing.T) {
	for _, limit := range []int{0, 8} {
		res, err := Minimize(context.Background(), misscaled{c: 3}, []float64{1}, Settings{Tol: 1e-12,
			LS: LineSearch{MaxBacktrackSteepest: limit}, Control: run.Control{MaxIter: 1000}})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("MaxBacktrackSteepest %d: %d iterations, F %.3g, %v (%v)", limit, res.Iters, res.F, res.Reason,
			res.ConvergedBy)
		if reached := res.F < 1e-10; reached != (limit == 0) || limit == 8 && res.ConvergedBy != NoDecrease {
			t.Errorf("MaxBacktrackSteepest %d: F %v after %d iterations (%v)", limit, res.F, res.Iters, res.Reason)
		}
	}
}

// Each way a run ends names its test in Result.ConvergedBy: the §3.5 tolerance, the target, a stationary start
// (g = 0, for the gradient methods and Old) and, in TestMisscaledMetric and TestFalseStop, no decrease.
func TestConvergedBy(t *testing.T) {
	cases := []struct {
		name   string
		obj    Objective
		x0     []float64
		s      Settings
		max    int
		reason run.StopReason
		want   Convergence
	}{
		{"tolerance", &toy{1, 1}, []float64{0.1, 0.2}, Settings{Tol: 1e-9}, 1000, run.Converged, Tolerance},
		{"target", &toy{1, 1}, []float64{0.1, 0.2}, Settings{Tol: 1e-9, Target: 6, UseTarget: true}, 1000,
			run.Converged, TargetReached},
		{"stationary", misscaled{c: 3}, []float64{0}, Settings{}, 10, run.Converged, Stationary},
		{"stationary Old", misscaled{c: 3}, []float64{0}, Settings{Method: Old}, 10, run.Converged, Stationary},
		{"stationary GD", misscaled{c: 3}, []float64{0}, Settings{Method: GD}, 10, run.Converged, Stationary},
		{"cap", &toy{1, 1}, []float64{0.1, 0.2}, Settings{Tol: 1e-9}, 1, run.MaxIter, NotConverged},
	}
	for _, c := range cases {
		res, err := Minimize(context.Background(), c.obj, c.x0, withControl(c.s, run.Control{MaxIter: c.max}))
		if err != nil {
			t.Fatal(err)
		}
		if res.Reason != c.reason || res.ConvergedBy != c.want {
			t.Errorf("%s: %v (%v) after %d iterations at F %v, want %v (%v)", c.name, res.Reason, res.ConvergedBy,
				res.Iters, res.F, c.reason, c.want)
		}
		if c.want == TargetReached && !(res.F <= c.s.Target) {
			t.Errorf("%s: F %v above the target %v", c.name, res.F, c.s.Target)
		}
	}
	b, err := json.Marshal(struct{ A, B Convergence }{NoDecrease, NotConverged})
	if err != nil || string(b) != `{"A":"no-decrease","B":""}` {
		t.Errorf("JSON %s, %v", b, err)
	}
	if got := Convergence(9).String(); got != "Convergence(9)" {
		t.Errorf("Convergence(9) prints %q", got)
	}
}

type misscaled struct{ c float64 }

func (m misscaled) Dim() int                  { return 1 }
func (m misscaled) Value(x []float64) float64 { return 0.5 * m.c * x[0] * x[0] }
func (m misscaled) Grad(g, x []float64) float64 {
	g[0] = m.c * x[0]
	return m.Value(x)
}
func (m misscaled) NatGrad(dst, g, x []float64) { dst[0] = 1e7 / m.c * g[0] }

type lineObj struct{ f func(float64) float64 }

func (l lineObj) Dim() int                    { return 1 }
func (l lineObj) Value(x []float64) float64   { return l.f(x[0]) }
func (l lineObj) Grad(g, x []float64) float64 { return l.f(x[0]) }
func (l lineObj) NatGrad(dst, g, x []float64) { copy(dst, g) }

func TestRestartPeriod(t *testing.T) {
	for _, c := range []struct{ n, want int }{{2010, 45}, {7016, 84}, {1, 1}, {4, 2}, {5, 3}, {10000, 100}, {10001, 101}} {
		if got := RestartPeriod(c.n); got != c.want {
			t.Errorf("RestartPeriod(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

func TestPowellBealeFires(t *testing.T) {
	for _, c := range []struct {
		cross, norm2 float64
		want         bool
	}{{0.2, 1, true}, {-0.2, 1, true}, {0.1999999, 1, false}, {-0.19, 1, false}, {5, 10, true}, {0, 0, true}} {
		if got := PowellBealeFires(c.cross, c.norm2, 0.2); got != c.want {
			t.Errorf("PowellBealeFires(%v, %v) = %v, want %v", c.cross, c.norm2, got, c.want)
		}
	}
}

// diagNatGrad writes the natural gradient v ⊙ g of the means of a diagonal Gaussian with variances v.
func diagNatGrad(dst, v, g []float64) {
	for i := range dst {
		dst[i] = v[i] * g[i]
	}
}

// searcher runs the step rule of s along p from x on obj one evaluation at a time, as the core does for a run, and
// counts the evaluations in res.
type searcher struct {
	obj Objective
	s   Settings
	ls  LineSearch
	xt  []float64
	res *Result
}

// search returns the accepted α and F(x + αp), or ok = false when no acceptable point was found. F0 = F(x), d0 =
// ∇Fᵀp < 0, a0 the trial step; steepest says p is −g̃ (or −g).
func (o *searcher) search(x, p []float64, F0, d0, a0 float64, steepest bool) (alpha, f float64, ok bool) {
	var l lsState
	l.start(F0, d0, a0, o.s.Search == Unit, steepest)
	for l.searching() {
		for i := range x {
			o.xt[i] = x[i] + l.trial*p[i]
		}
		f := o.obj.Value(o.xt)
		o.res.FEvals++
		if math.IsNaN(f) || math.IsInf(f, 0) {
			o.res.Rejected++
			f = math.Inf(1)
		}
		l.feed(f, o.ls)
	}
	if !l.ok {
		return 0, 0, false
	}
	return l.a, l.bestF, true
}

func newRand(seed uint64) *rand.Rand { return rand.New(rng.NewSource(seed, 4)) }

func dotF(a, b []float64) float64 { return dot(a, b) }

// randSPD returns AAᵀ + jitter·I for a standard normal n×n A (drawn row by row).
func randSPD(r *rand.Rand, n int, jitter float64) *mat.SymDense {
	a := mat.NewDense(n, n, nil)
	a.Apply(func(_, _ int, _ float64) float64 { return r.NormFloat64() }, a)
	s := mat.NewSymDense(n, nil)
	s.SymOuterK(1, a)
	s.AddSym(s, mat.NewDiagDense(n, slices.Repeat([]float64{jitter}, n)))
	return s
}
