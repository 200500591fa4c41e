package cholnglr

import (
	"context"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/geovb/geovb/algos/cholng"
	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/internal/datatest"
	"github.com/geovb/geovb/internal/repro"
)

// Acceptance test 18: the log-joint gradient against central finite differences (rel ≤ 1e-6).
func TestGradientFD(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n, d := 30, 4
	m := &Model{N: n, D: d, X: make([]float64, n*d), Y: make([]float64, n), Sigma0: 10}
	for i := range m.X {
		m.X[i] = 3 * r.NormFloat64()
	}
	for i := range m.Y {
		m.Y[i] = float64(r.IntN(2))
	}
	th := []float64{0.5, -1, 2, 0.1}
	g := make([]float64, d)
	m.LogJoint(th, g)
	tmp := make([]float64, d)
	for j := 0; j < d; j++ {
		p, q := append([]float64(nil), th...), append([]float64(nil), th...)
		p[j] += 1e-6
		q[j] -= 1e-6
		fd := (m.LogJoint(p, tmp) - m.LogJoint(q, tmp)) / 2e-6
		if e := math.Abs(fd-g[j]) / max(1, math.Abs(g[j])); e > 1e-6 {
			t.Fatalf("∂/∂θ_%d: FD %.9g, analytic %.9g", j, fd, g[j])
		}
	}
	// Constant: at θ = 0 the log joint is −n log 2 − (d/2) log(2π·100).
	lp := m.LogJoint(make([]float64, d), tmp)
	if want := -float64(n)*math.Ln2 - 2*math.Log(2*math.Pi*100); math.Abs(lp-want) > 1e-10 {
		t.Fatalf("log joint at 0: %v, want %v", lp, want)
	}
}

func loadAll(t testing.TB) map[string]*Model {
	out := map[string]*Model{}
	g, err := GermanFile(datatest.Require(t, "german-credit", "german.data"))
	if err != nil {
		t.Fatal(err)
	}
	out["german"] = g
	h, err := datasets.ReadHeartFile(datatest.Require(t, "heart", "heart.dat"))
	if err != nil {
		t.Fatal(err)
	}
	out["heart"] = Heart(h)
	ic, err := datasets.ReadICUFile(datatest.Require(t, "icu", "icu.csv"))
	if err != nil {
		t.Fatal(err)
	}
	out["icu"] = ICU(ic)
	return out
}

// The paper's coding gives d = 49 (German), 19 (Heart), 20 (ICU); binary columns are not standardised.
func TestDesignDims(t *testing.T) {
	ms := loadAll(t)
	for name, want := range map[string]struct{ n, d int }{"german": {1000, 49}, "heart": {270, 19}, "icu": {200, 20}} {
		m := ms[name]
		if m.N != want.n || m.D != want.d {
			t.Errorf("%s: %d×%d, want %d×%d (%v)", name, m.N, m.D, want.n, want.d, m.Names)
		}
	}
}

func median(xs []int) int {
	s := append([]int(nil), xs...)
	sort.Ints(s)
	return s[len(s)/2]
}

// Acceptance tests 21–22 (Table 5, full covariance and full precision): L̂ of Snngm and Natural (Adam) within ±0.2
// of the paper, Euclidean (Adam) within ±2.5 and ≤ L̂(Snngm) + 0.3, and median T(Snngm) < min(median T of both
// Adam variants), over 3 seeds.
func reproTable5(t *testing.T, name string, want map[cholng.Param]float64) {
	repro.Require(t)
	m := loadAll(t)[name]
	b, err := backend.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []cholng.Param{cholng.Covariance, cholng.Precision} {
		iters := map[string][]int{}
		lhat := map[string]float64{}
		for _, meth := range []struct {
			name string
			opt  cholng.Optimizer
			kind cholng.Kind
		}{{"snngm", cholng.Snngm, cholng.Natural}, {"nat-adam", cholng.Adam, cholng.Natural}, {"euc-adam", cholng.Adam, cholng.Euclidean}} {
			sum := 0.0
			for seed := uint64(1); seed <= 3; seed++ {
				res, err := cholng.Fit(context.Background(), b, m, cholng.Config{Param: p, Optimizer: meth.opt, Kind: meth.kind, Seed: seed})
				if err != nil {
					t.Fatal(err)
				}
				iters[meth.name] = append(iters[meth.name], res.Iters)
				sum += res.LHat
				t.Logf("%s %v %s seed %d: T %d, L̂ %.2f, %v", name, p, meth.name, seed, res.Iters, res.LHat, res.Time.Round(1e6))
			}
			lhat[meth.name] = sum / 3
		}
		w := want[p]
		for _, k := range []string{"snngm", "nat-adam"} {
			if math.Abs(lhat[k]-w) > 0.2 {
				t.Errorf("%s %v %s: mean L̂ %.2f, paper %.1f (±0.2)", name, p, k, lhat[k], w)
			}
		}
		if lhat["euc-adam"] > lhat["snngm"]+0.3 || math.Abs(lhat["euc-adam"]-w) > 2.5 {
			t.Errorf("%s %v euc-adam: L̂ %.2f vs Snngm %.2f, paper %.1f", name, p, lhat["euc-adam"], lhat["snngm"], w)
		}
		ms, ma, me := median(iters["snngm"]), median(iters["nat-adam"]), median(iters["euc-adam"])
		if ms >= min(ma, me) {
			t.Errorf("%s %v: median T Snngm %d, not below Adam (natural %d, Euclidean %d)", name, p, ms, ma, me)
		}
	}
}

func TestReproTable5German(t *testing.T) {
	reproTable5(t, "german", map[cholng.Param]float64{cholng.Covariance: -625.7, cholng.Precision: -625.6})
}

func TestReproTable5Heart(t *testing.T) {
	reproTable5(t, "heart", map[cholng.Param]float64{cholng.Covariance: -144.0, cholng.Precision: -144.0})
}

func TestReproTable5ICU(t *testing.T) {
	reproTable5(t, "icu", map[cholng.Param]float64{cholng.Covariance: -115.3, cholng.Precision: -115.2})
}
