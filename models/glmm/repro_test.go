package glmm

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/geovb/geovb/algos/cholng"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/internal/repro"
	"github.com/geovb/geovb/internal/testbackend"
)

// method is a Table 6 GVA row: Alg 2c with the masked Euclidean gradient + Adam, natural gradient + Adam, Snngm.
type method struct {
	name string
	opt  cholng.Optimizer
	kind cholng.Kind
}

var table6Methods = []method{
	{"euclidean-adam", cholng.Adam, cholng.Euclidean},
	{"natural-adam", cholng.Adam, cholng.Natural},
	{"natural-snngm", cholng.Snngm, cholng.Natural},
}

// FitGVA fits the GVA family (Alg 2c, μ = 0, T = 10·I, §8.2) to m.
func fitGVA(t testing.TB, m *Model, me method, seed uint64) *cholng.SparseResult {
	f, err := cholng.NewArrow(testbackend.Open(t), m.Groups(), m.GlobalDim(), 10)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := cholng.FitSparse(context.Background(), f, m, cholng.Config{Optimizer: me.opt, Kind: me.kind, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

type cell struct {
	medT  float64
	meanL float64
}

func table6(t *testing.T, m *Model, name string, paper map[string][2]float64, offset float64) map[string]cell {
	out := map[string]cell{}
	for _, me := range table6Methods {
		var ts []float64
		sum := 0.0
		for seed := uint64(1); seed <= 3; seed++ {
			r := fitGVA(t, m, me, seed)
			if r.Reason != run.Converged {
				t.Errorf("%s %s seed %d: stopped by %v", name, me.name, seed, r.Reason)
			}
			ts = append(ts, float64(r.Iters)/1000)
			sum += r.LHat
			t.Logf("%s %-15s seed %d: T = %2.0fk  L̂ = %.2f  (paper convention L̂ + Σlog y! = %.2f; paper %v, offset [OPEN] %.1f)  %.2fs",
				name, me.name, seed, float64(r.Iters)/1000, r.LHat, r.LHat+m.LogFactorial(), paper[me.name], offset, r.Time.Seconds())
		}
		slices.Sort(ts)
		out[me.name] = cell{medT: ts[1], meanL: sum / 3}
	}
	return out
}

// Acceptance test 24 (Table 6, Epilepsy GVA): Snngm median T ∈ [8, 16]k (paper 10), Euclidean-Adam T ∈ [30, 55]k
// (paper 42), L̂(Snngm) − L̂(Euc-Adam) ∈ [+2, +6] (paper +3.7), and the absolute L̂(Snngm) under the documented log
// joint (all constants) −687.3 ± 0.3. The paper's absolute values differ by an unexplained +14.9 after dropping
// Σ log y! (not explained), so they are printed, not asserted.
func TestReproTable6Epilepsy(t *testing.T) {
	repro.Require(t)
	m := epilepsy(t)
	c := table6(t, m, "epilepsy", map[string][2]float64{"euclidean-adam": {42, 3135.7}, "natural-adam": {42, 3136.1},
		"natural-snngm": {10, 3139.4}}, 14.9)
	sn, eu := c["natural-snngm"], c["euclidean-adam"]
	if sn.medT < 8 || sn.medT > 16 {
		t.Errorf("Snngm median T = %vk, want [8, 16]k (paper 10)", sn.medT)
	}
	if eu.medT < 30 || eu.medT > 55 {
		t.Errorf("Euclidean-Adam median T = %vk, want [30, 55]k (paper 42)", eu.medT)
	}
	if g := sn.meanL - eu.meanL; g < 2 || g > 6 {
		t.Errorf("L̂(Snngm) − L̂(Euc-Adam) = %.2f, want [2, 6] (paper 3.7)", g)
	}
	if math.Abs(sn.meanL+687.3) > 0.3 {
		t.Errorf("L̂(Snngm) = %.2f, want −687.3 ± 0.3", sn.meanL)
	}
}

// Acceptance test 25 (Table 6, Toenail GVA): Snngm median T ∈ [13, 21]k (paper 17), Euclidean-Adam T ∈ [28, 45]k
// (paper 32), |L̂(Snngm) − L̂(Euc-Adam)| ≤ 0.6 (paper 0.1), absolute L̂(Snngm) −657.4 ± 0.3 (paper −646.1, offset
// 11.3 [OPEN]).
func TestReproTable6Toenail(t *testing.T) {
	repro.Require(t)
	m := toenail(t)
	c := table6(t, m, "toenail", map[string][2]float64{"euclidean-adam": {32, -646.2}, "natural-adam": {32, -646.2},
		"natural-snngm": {17, -646.1}}, 11.3)
	sn, eu := c["natural-snngm"], c["euclidean-adam"]
	if sn.medT < 13 || sn.medT > 21 {
		t.Errorf("Snngm median T = %vk, want [13, 21]k (paper 17)", sn.medT)
	}
	if eu.medT < 28 || eu.medT > 45 {
		t.Errorf("Euclidean-Adam median T = %vk, want [28, 45]k (paper 32)", eu.medT)
	}
	if g := math.Abs(sn.meanL - eu.meanL); g > 0.6 {
		t.Errorf("|L̂(Snngm) − L̂(Euc-Adam)| = %.2f, want ≤ 0.6 (paper 0.1)", g)
	}
	if math.Abs(sn.meanL+657.4) > 0.3 {
		t.Errorf("L̂(Snngm) = %.2f, want −657.4 ± 0.3", sn.meanL)
	}
}

// fitRVB fits the RVB family: Alg 1c over θ̃ = (b̃_1, …, b̃_n, θ_G) with the expansion at the conditional mode,
// μ = 0 and C diagonal, 1 on the transformed locals and 0.1 on θ_G (§8.2).
func fitRVB(t testing.TB, m *Model, me method, seed uint64) *cholng.SparseResult {
	q := NewReparam(m)
	q.AtMode = true
	sizes := q.BlockSizes()
	diag := make([]float64, len(sizes))
	for i := range diag {
		diag[i] = 1
	}
	diag[len(diag)-1] = 0.1
	f, err := cholng.NewBlockDiag(testbackend.Open(t), sizes, diag, false)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := cholng.FitSparse(context.Background(), f, q, cholng.Config{Optimizer: me.opt, Kind: me.kind, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// reproRVB runs the three methods on the RVB family over 3 seeds and checks, against the paper's RVB2 row (the
// row our expansion at the conditional mode — a Laplace approximation of p(b_i | θ_G, y_i) — is assumed to
// correspond to; the transform is inferred: the paper does not give it):
//   - the gain over GVA, mean L̂(Snngm) − L̂_GVA, within ±0.5 of the paper's RVB2 − GVA(Snngm) difference, with
//     L̂_GVA the checked GVA value under our log joint (TestReproTable6Epilepsy and …Toenail; absolute GLMM
//     values carry an unexplained offset, differences do not);
//   - the methods agree: |mean L̂(method) − mean L̂(Snngm)| ≤ 0.3 (paper: equal to 0.1);
//   - median T(Snngm) within tT of the paper's.
func reproRVB(t *testing.T, m *Model, name string, gva, paperGain float64, paperT map[string]float64, lo, hi float64) {
	means := map[string]float64{}
	var snT []float64
	for _, me := range table6Methods {
		sum := 0.0
		for seed := uint64(1); seed <= 3; seed++ {
			r := fitRVB(t, m, me, seed)
			if r.Reason != run.Converged {
				t.Errorf("%s RVB %s seed %d: stopped by %v", name, me.name, seed, r.Reason)
			}
			sum += r.LHat
			if me.opt == cholng.Snngm {
				snT = append(snT, float64(r.Iters)/1000)
			}
			t.Logf("%s RVB %-15s seed %d: T = %2.0fk (paper %vk)  L̂ = %.2f  L̂ − L̂_GVA = %+.2f  %.2fs",
				name, me.name, seed, float64(r.Iters)/1000, paperT[me.name], r.LHat, r.LHat-gva, r.Time.Seconds())
		}
		means[me.name] = sum / 3
	}
	sn := means["natural-snngm"]
	if g := sn - gva; math.Abs(g-paperGain) > 0.5 {
		t.Errorf("%s: L̂_RVB(Snngm) − L̂_GVA = %+.2f, paper RVB2 %+.1f (±0.5)", name, g, paperGain)
	}
	for k, v := range means {
		if math.Abs(v-sn) > 0.3 {
			t.Errorf("%s: mean L̂ of %s %.2f differs from Snngm's %.2f by more than 0.3", name, k, v, sn)
		}
	}
	slices.Sort(snT)
	if snT[1] < lo || snT[1] > hi {
		t.Errorf("%s: RVB Snngm median T = %vk, want [%v, %v]k (paper %vk)", name, snT[1], lo, hi, paperT["natural-snngm"])
	}
}

// Table 6, Epilepsy RVB: gain over GVA +0.8 ± 0.5 (paper RVB2 3140.2 − GVA 3139.4; RVB1 +0.7), methods agree, Snngm
// median T ∈ [2, 10]k (paper RVB2 6k, RVB1 5k). HERS: no public data, not run.
func TestReproTable6EpilepsyRVB(t *testing.T) {
	repro.Require(t)
	reproRVB(t, epilepsy(t), "epilepsy", -687.3, 0.8,
		map[string]float64{"euclidean-adam": 8, "natural-adam": 6, "natural-snngm": 6}, 2, 10)
}

// Table 6, Toenail RVB: gain over GVA +0.6 ± 0.5 (paper RVB2 −645.5 − GVA −646.1; RVB1 −0.6), methods agree, Snngm
// median T ∈ [3, 13]k (paper RVB2 8k, RVB1 18k).
func TestReproTable6ToenailRVB(t *testing.T) {
	repro.Require(t)
	reproRVB(t, toenail(t), "toenail", -657.4, 0.6,
		map[string]float64{"euclidean-adam": 12, "natural-adam": 8, "natural-snngm": 8}, 3, 13)
}
