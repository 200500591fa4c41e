package rcgexp

import (
	"context"
	"math"
	"slices"
	"sort"
	"testing"

	"github.com/geovb/geovb/algos/rcg"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/internal/repro"
	"github.com/geovb/geovb/models/nfa"
)

// The long NFA/NSSM experiments of paper 004 (Figs. 9–11, gates 19–20) and the curvature premise of RCG on the
// NSSM; they moved here from models/nfa, which no longer imports this package.

// gateNSSM returns the gate's NSSM (NSSM-SYN, d = 5, H = 20, Fig. 9's model) of size T with moments mo.
func gateNSSM(t *testing.T, T int, mo nfa.Moments) *nfa.Model {
	t.Helper()
	m, err := nfa.New(nfa.SyntheticNSSM(T, 1), T, 21, nfa.Config{Dynamic: true, D: 5, H: 20, Moments: mo})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// warmNSSM returns the gate's NSSM of size T after iters RCG iterations from Init(0), with the between-step update
// applied at the returned means.
func warmNSSM(t *testing.T, T int, mo nfa.Moments, iters int) (*nfa.Model, []float64) {
	t.Helper()
	m := gateNSSM(t, T, mo)
	x0, err := m.Init(0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := rcg.Minimize(context.Background(), m, x0, rcg.Settings{Method: rcg.RCG, PowellBeale: 0.2,
		Control: run.Control{MaxIter: iters}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Update(res.X); err != nil {
		t.Fatal(err)
	}
	return m, res.X
}

// TestReproMetricIsCurvature checks the premise of RCG on the NSSM: with the fixed-point variances
// (13), the Fisher metric of q matches the curvature of F in the means (Price/Bonnet), so a unit natural-gradient
// step is a (block-diagonal) Newton step. On the gate's NSSM-SYN (T = 100) after 100 RCG iterations with the
// Gauss–Hermite moments (≈ 10 s):
//   - weights: the diagonal Hessian ∂²F/∂w̄² times the variance w̃ (the inverse of the metric) is ≈ 1 in the sense of
//     checkCurvature, for every third weight;
//   - states: the decrease of F under the unit step −G⁻¹g on the state block (two chain scans per component) is
//     within 35 % of the quadratic model's ½gᵀG⁻¹g. (For the weights the unit step is not a Newton step: the diagonal
//     metric ignores their correlations, which the conjugate directions take care of.)
//
// Both checks fail without the clamp of the Gauss–Hermite residual variance (measured: H·w̃ 5–95 % 0.33–2.35, the
// unit state step raising F by 3.5e6), and the weight check fails with the Taylor moments (95 % quantile 2.54; up to
// ≈ 500 at other points, docs/rcg.md): the Taylor mean ½φ″(ȳ)ỹ breaks the Price/Bonnet identity when a
// pre-activation variance is O(1).
func TestReproMetricIsCurvature(t *testing.T) {
	repro.Require(t)
	m, x := warmNSSM(t, 100, nfa.GaussHermite, 100)
	g, gt := make([]float64, len(x)), make([]float64, len(x))
	F0 := m.Grad(g, x)
	m.NatGrad(gt, g, x)
	n := m.T * m.Cfg.D
	wv := append(append([]float64(nil), m.WVarF...), m.WVarG...)
	checkCurvature(t, "weights", m, x, n, wv, 3) // every third weight
	// The states: the chain metric has the tridiagonal structure of their Hessian, so the unit step on the block
	// should realise the quadratic model's decrease.
	xt := append([]float64(nil), x...)
	var gn float64
	for i := range n {
		xt[i] -= gt[i]
		gn += g[i] * gt[i]
	}
	dF := m.Value(xt) - F0
	t.Logf("states: unit natural step ΔF %.4g, quadratic model −½gᵀG⁻¹g %.4g", dF, -gn/2)
	if rel := math.Abs(dF+gn/2) / (gn / 2); !(rel <= 0.35) {
		t.Errorf("states: unit natural step ΔF %.4g vs model %.4g (relative difference %.2g)", dF, -gn/2, rel)
	}
}

// checkCurvature checks that the metric is the curvature of F in the means x[from+k] whose variances are v[k], k a
// multiple of every (with the fixed-point variances (13) the
// Fisher metric should be the curvature): the diagonal Hessian ∂²F/∂x̄² times the variance (curvatureRatios) has median in
// [0.9, 1.1] and 5–95 % quantiles in [0.75, 1.33].
func checkCurvature(t *testing.T, what string, m *nfa.Model, x []float64, from int, v []float64, every int) {
	t.Helper()
	q := curvatureRatios(t, what, m, x, from, v, every)
	if q(0.5) < 0.9 || q(0.5) > 1.1 || q(0.05) < 0.75 || q(0.95) > 1.33 {
		t.Errorf("%s: H·θ̃ quantiles %.3g, %.3g, %.3g not ≈ 1", what, q(0.05), q(0.5), q(0.95))
	}
}

// curvatureRatios computes H_ii·v[k] for the means i = from+k, k a multiple of every, with the diagonal Hessian
// ∂²F/∂x̄² by central differences of the analytic gradient (h = 1e-5), logs their quantiles and returns the
// quantile function.
func curvatureRatios(t *testing.T, what string, m *nfa.Model, x []float64, from int, v []float64, every int) func(float64) float64 {
	t.Helper()
	gp, gm := make([]float64, len(x)), make([]float64, len(x))
	var r []float64
	for k := 0; k < len(v); k += every {
		i := from + k
		old, h := x[i], 1e-5
		x[i] = old + h
		m.Grad(gp, x)
		x[i] = old - h
		m.Grad(gm, x)
		x[i] = old
		r = append(r, (gp[i]-gm[i])/(2*h)*v[k])
	}
	sort.Float64s(r)
	q := func(p float64) float64 { return r[int(p*float64(len(r)-1))] }
	t.Logf("%s: H·θ̃ quantiles 5%% %.3g, 50%% %.3g, 95%% %.3g, max %.3g (%d means)", what, q(0.05), q(0.5), q(0.95),
		q(1), len(r))
	return q
}

// TestReproNFAMetricIsCurvature is the premise of RCG on NFA, where the metric is diagonal for the sources as for
// the weights: on NFA-SYN at T = 300 after 400 RCG iterations from Init(0) with the Gauss–Hermite moments, H·θ̃ ≈ 1
// for every third source and every f weight (checkCurvature). With the Taylor moments the same run stalls, and the
// test asserts the stall's signature (docs/rcg.md, "Why RCG stalls on NFA with the Taylor moments"): F at least 500
// above GH's (measured 245.4 against −1136.2), Powell–Beale restarts on more than half the iterations (318 of 400;
// GH 31), and some sources whose fixed-point variance exceeds their inverse curvature tenfold (H·s̃ 95 % quantile
// 117 over every third source, largest 450), so that the natural gradient overshoots them. It also logs the Taylor
// ratios of the f weights (not asserted). Along −g̃ on the sources alone (bestBlockSteps) the best step is the unit
// one with GH (asserted within a factor 4; measured 1) and ≤ 1/32 with Taylor (measured 2⁻⁹); the weights' best
// steps are logged. ≈ 25 s for both.
func TestReproNFAMetricIsCurvature(t *testing.T) {
	repro.Require(t)
	const T = 300
	run400 := func(mo nfa.Moments) (*nfa.Model, *rcg.Result) {
		m, err := nfa.New(nfa.SyntheticNFA(T, 1), T, 21, nfa.Config{D: 5, H: 20, Moments: mo})
		if err != nil {
			t.Fatal(err)
		}
		x0, err := m.Init(0)
		if err != nil {
			t.Fatal(err)
		}
		res, err := rcg.Minimize(context.Background(), m, x0, rcg.Settings{Method: rcg.RCG, PowellBeale: 0.2,
			Control: run.Control{MaxIter: 400}})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Update(res.X); err != nil {
			t.Fatal(err)
		}
		t.Logf("%v: F %.2f after %d iterations (%d restarts)", mo, res.F, res.Iters, res.Restarts)
		return m, res
	}
	m, gh := run400(nfa.GaussHermite)
	n := m.T * m.Cfg.D
	checkCurvature(t, "GH sources", m, gh.X, 0, m.SVar, 3)
	checkCurvature(t, "GH weights", m, gh.X, n, m.WVarF, 1)
	if a := bestBlockSteps(t, "GH", m, gh.X)[0]; a < 0.25 || a > 4 {
		t.Errorf("GH sources: best step %.3g along −g̃, want the natural gradient's unit step within a factor 4", a)
	}

	m, ty := run400(nfa.Taylor)
	if !(ty.F > gh.F+500) || !(2*ty.Restarts > ty.Iters) {
		t.Errorf("Taylor: F %.2f (GH %.2f), %d restarts in %d iterations; want the stall: F ≥ 500 above GH's and "+
			"restarts on more than half the iterations", ty.F, gh.F, ty.Restarts, ty.Iters)
	}
	if q := curvatureRatios(t, "Taylor sources", m, ty.X, 0, m.SVar, 3); !(q(0.95) > 10) {
		t.Errorf("Taylor sources: H·s̃ 95 %% quantile %.3g, want > 10 (the fixed-point variance far above the "+
			"inverse curvature)", q(0.95))
	}
	curvatureRatios(t, "Taylor weights", m, ty.X, n, m.WVarF, 1)
	if a := bestBlockSteps(t, "Taylor", m, ty.X)[0]; !(a <= 1.0/32) {
		t.Errorf("Taylor sources: best step %.3g along −g̃, want ≤ 1/32 (the natural gradient overshoots)", a)
	}
}

// bestBlockSteps returns, for the blocks sources, A and B (f's weights) of the NFA model m (d = 5, H = 20, p = 21) at
// x, the α = 2^k, k = −12…4, that minimises F(x − α g̃) with g̃ the natural gradient restricted to the block and
// every other mean and the variances held. With the metric a curvature model the best α is ≈ 1 (a Newton step on
// the block, up to the correlations the diagonal metric ignores); a metric too flat for some means makes it ≪ 1.
func bestBlockSteps(t *testing.T, what string, m *nfa.Model, x []float64) [3]float64 {
	t.Helper()
	n := m.T * m.Cfg.D
	const d, h, p = 5, 20, 21
	blocks := [3][2]int{{0, n}, {n, n + h*d}, {n + h*d + h, n + h*d + h + p*h}}
	g, gt := make([]float64, len(x)), make([]float64, len(x))
	m.Grad(g, x)
	m.NatGrad(gt, g, x)
	var best [3]float64
	xt := make([]float64, len(x))
	for b, bl := range blocks {
		bestF := math.Inf(1)
		for k := -12; k <= 4; k++ {
			a := math.Ldexp(1, k)
			copy(xt, x)
			for i := bl[0]; i < bl[1]; i++ {
				xt[i] -= a * gt[i]
			}
			if f := m.Value(xt); f < bestF {
				best[b], bestF = a, f
			}
		}
	}
	t.Logf("%s: best α along −g̃ on the block: sources %.3g, A %.3g, B %.3g", what, best[0], best[1], best[2])
	return best
}

// gate runs Sweep at size T and returns the median time-to-target of each method (target: RCG's median final F + ε)
// and the runs; a run that never reaches the target counts with its budget (TimeOrBound: the cap, whether the cap
// stopped it or it stopped earlier at a worse F), so the ratios are then lower bounds.
// Times are process CPU seconds (Run).
func gate(t *testing.T, sw Sweep) (map[string]float64, map[string][]*Trace) {
	runs, err := SweepNFA(sw)
	if err != nil {
		t.Fatal(err)
	}
	target := sw.Target(runs["RCG"])
	t.Logf("T=%d, %v moments, target F %.4f (RCG's median final F + ε)", sw.T, sw.Moments, target)
	ttt := map[string]float64{}
	for _, m := range sw.Methods {
		ttt[m] = medianTimeToTarget(t, m, runs[m], target)
	}
	return ttt, runs
}

// medianTimeToTarget logs the summary of one method's runs against target and returns their median
// time-to-target, misses counted with their budget.
func medianTimeToTarget(t *testing.T, method string, runs []*Trace, target float64) float64 {
	t.Helper()
	var ts, es, fs, rt []float64
	reached := 0
	for _, tr := range runs {
		a, e, ok := tr.TimeOrBound(target)
		if ok {
			reached++
		}
		ts, es = append(ts, a), append(es, float64(e))
		fs, rt = append(fs, tr.Final), append(rt, tr.Time)
	}
	med := Median(ts)
	t.Logf("%s: median time-to-target %.3gs (%g evaluations), reached %d/%d, median run time %.3gs, median final F %.4f",
		method, med, Median(es), reached, len(runs), Median(rt), Median(fs))
	return med
}

// TestReproNSSMGate is acceptance gate 19 on NSSM-SYN (the synthetic substitute for the speech data): RCG ≥ 10× faster than RG and CG to RCG's
// median final F at the largest size run here — T = 100, 2 seeds, RCG capped at 1600 iterations (≈ 8 s of CPU time),
// the others at 10× RCG's median run time (the paper's sizes are 200–500 and 1000), with the Gauss–Hermite moments.
// The iteration cap makes the target the same on every machine (median final F 43.79: RCG's runs end at 40.21 and
// 47.37); under a 4 s CPU-time cap it was 51.8 on a fast machine and 58.0 on a loaded one, where one RG run reached it
// in 29 s and the gate failed. With the Taylor moments RCG stalls and the gate fails (docs/rcg.md: the Taylor mean
// breaks the Price/Bonnet identity, so the Fisher metric is no curvature model for weakly determined weights).
func TestReproNSSMGate(t *testing.T) {
	repro.Require(t)
	ttt, _ := gate(t, Sweep{Dynamic: true, T: 100, Seeds: 2, Moments: nfa.GaussHermite,
		Methods: []string{"RCG", "CG", "RG"}, RCGMaxIter: 1600, CapFactor: 10})
	for _, m := range []string{"CG", "RG"} {
		r := ttt[m] / ttt["RCG"]
		t.Logf("%s/RCG time-to-target %.3g", m, r)
		if r < 10 {
			t.Errorf("NSSM: %s/RCG time-to-target %.3g, gate ≥ 10", m, r)
		}
	}
}

// TestReproNFAGate is acceptance gate 20 on NFA-SYN (Fig. 11's claims): RCG fastest, and CG faster than RG. T = 100, 3
// seeds, Gauss–Hermite moments, RCG capped at 3000 iterations, CG and RG at 3× RCG's median run time (≈ 25 s of
// CPU time). RCG's runs must converge on their own before the cap (in 407, 473 and 886 iterations, a median 1.5 s),
// so the target (F 412.5525) is the same on every machine, as a CPU-time cap could not promise (TestReproNSSMGate).
// RCG's median time-to-target (RCG's median final F + ε) must be below CG's and RG's; CG's and RG's are compared at
// the worse of their own targets (median final F + ε, a level at least half the runs of each reach), where CG's
// median must be below RG's. With the Taylor moments RCG still wins at this size but stalls from T ≈ 300
// (TestReproNFAMetricIsCurvature).
func TestReproNFAGate(t *testing.T) {
	repro.Require(t)
	sw := Sweep{T: 100, Seeds: 3, Moments: nfa.GaussHermite, Methods: []string{"RCG", "CG", "RG"},
		RCGMaxIter: 3000, CapFactor: 3}
	ttt, runs := gate(t, sw)
	for i, tr := range runs["RCG"] {
		t.Logf("RCG run %d: %d iterations, %s", i, tr.Iters, tr.Reason)
		if tr.Reason != "converged" {
			t.Errorf("RCG run %d stopped %s after %d iterations, not converged: the target depends on the cap", i,
				tr.Reason, tr.Iters)
		}
	}
	for _, m := range []string{"CG", "RG"} {
		t.Logf("%s/RCG time-to-target %.3g", m, ttt[m]/ttt["RCG"])
		if ttt[m] <= ttt["RCG"] {
			t.Errorf("NFA: %s time-to-target %.3g ≤ RCG's %.3g", m, ttt[m], ttt["RCG"])
		}
	}
	pair := max(sw.Target(runs["CG"]), sw.Target(runs["RG"]))
	t.Logf("CG against RG at F %.4f, the worse of their median final F + ε", pair)
	cg, rg := medianTimeToTarget(t, "CG", runs["CG"], pair), medianTimeToTarget(t, "RG", runs["RG"], pair)
	if !(cg < rg) {
		t.Errorf("NFA: CG's median time %.3g to F %.4f not below RG's %.3g", cg, pair, rg)
	}
}

// TestReproNSSMOld puts the heuristic Old of Valpola & Karhunen (2002) against RCG on the NSSM gate's problem
// (NSSM-SYN T = 100, 2 seeds, Gauss–Hermite, RCG capped at 1000 iterations (≈ 5 s of CPU time, target F 50.26),
// Old at 5× RCG's median run time; ≈ 60 s of CPU time). Gates: RCG's median time-to-target (RCG's median final
// F + ε) is below Old's (§6.6: RCG < Old), and the ratio is at least 3 (the hard gate of §6.7, set there for
// T = 1000, d = 7, H = 30; lower bound when Old never reaches the target). Where Old lands against RG and CG (§6.6:
// Old < min(RG, CG)) is measured with rcg-nssm and reported in docs/rcg.md, not here: RG and CG would need another
// 100 s of CPU time at this cap.
func TestReproNSSMOld(t *testing.T) {
	repro.Require(t)
	ttt, _ := gate(t, Sweep{Dynamic: true, T: 100, Seeds: 2, Moments: nfa.GaussHermite, Methods: []string{"RCG", "Old"},
		RCGMaxIter: 1000, CapFactor: 5})
	r := ttt["Old"] / ttt["RCG"]
	t.Logf("Old/RCG time-to-target %.3g", r)
	if !(ttt["RCG"] < ttt["Old"]) || r < 3 {
		t.Errorf("NSSM: Old/RCG time-to-target %.3g (RCG %.3gs, Old %.3gs), gates RCG < Old and ratio ≥ 3", r, ttt["RCG"], ttt["Old"])
	}
}

// TestReproNSSMHyperDelay checks nfa.Config.HyperDelay on the gate's NSSM-SYN (T = 100, GH) with the ARD and
// hierarchical priors, for two seeds (≈ 10 s of CPU time): after 400 RCG iterations from Init, the run with the
// default delay has F at least 20 nats below the run with none, and its dynamics keep at least one hidden unit of g
// (the largest ARD log-std of D's columns above −4). Without the delay that log-std was −4.75 at seed 0, every unit
// of g nearly switched off, and −1.81 at seed 1; F was worse at both (docs/rcg.md, "ARD pruning").
func TestReproNSSMHyperDelay(t *testing.T) {
	repro.Require(t)
	const T, iters = 100, 400
	for seed := range uint64(2) {
		var F [2]float64
		var topD [2]float64
		for k, delay := range []int{0, -1} {
			m, err := nfa.New(nfa.SyntheticNSSM(T, 1), T, 21, nfa.Config{Dynamic: true, D: 5, H: 20,
				Moments: nfa.GaussHermite, ARD: true, Hierarchical: true, HyperDelay: delay})
			if err != nil {
				t.Fatal(err)
			}
			x0, err := m.Init(seed)
			if err != nil {
				t.Fatal(err)
			}
			res, err := rcg.Minimize(context.Background(), m, x0, rcg.Settings{Method: rcg.RCG, PowellBeale: 0.2,
				Control: run.Control{MaxIter: iters}})
			if err != nil {
				t.Fatal(err)
			}
			F[k] = res.F
			topD[k] = slices.Max(m.VPhiMean[len(m.VPhiMean)-m.Cfg.HG:]) // D's columns come last
		}
		t.Logf("seed %d: F after %d iterations %.2f with the default delay, %.2f without; largest ARD log-std of "+
			"D's columns %.2f, %.2f", seed, iters, F[0], F[1], topD[0], topD[1])
		if !(F[0] < F[1]-20) || !(topD[0] > -4) {
			t.Errorf("seed %d: with the delay F %v (want ≤ %v) and D's largest ARD log-std %v (want > −4)", seed,
				F[0], F[1]-20, topD[0])
		}
	}
}
