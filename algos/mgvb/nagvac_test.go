package mgvb

import (
	"errors"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/rng"
)

// fisherByTrace builds the Fisher of (b, c) for N(μ, bbᵀ + diag(c²)) entry by entry from its definition
// ½tr(Σ⁻¹ ∂ᵢΣ Σ⁻¹ ∂ⱼΣ), with Σ⁻¹ from a dense inverse: the reference for both natural-gradient forms.
func fisherByTrace(t *testing.T, bv, cv []float64) *mat.Dense {
	t.Helper()
	d := len(bv)
	sigma := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			sigma.Set(i, j, bv[i]*bv[j])
		}
		sigma.Set(i, i, sigma.At(i, i)+cv[i]*cv[i])
	}
	var inv mat.Dense
	if err := inv.Inverse(sigma); err != nil {
		t.Fatal(err)
	}
	deriv := make([]*mat.Dense, 2*d)
	for k := 0; k < d; k++ {
		db := mat.NewDense(d, d, nil)
		for j := 0; j < d; j++ {
			db.Set(k, j, db.At(k, j)+bv[j])
			db.Set(j, k, db.At(j, k)+bv[j])
		}
		dc := mat.NewDense(d, d, nil)
		dc.Set(k, k, 2*cv[k])
		deriv[k], deriv[d+k] = db, dc
	}
	f := mat.NewDense(2*d, 2*d, nil)
	for i := range deriv {
		var l mat.Dense
		l.Mul(&inv, deriv[i])
		for j := range deriv {
			var r, p mat.Dense
			r.Mul(&inv, deriv[j])
			p.Mul(&l, &r)
			f.Set(i, j, 0.5*mat.Trace(&p))
		}
	}
	return f
}

// relDiff returns ‖got − want‖/‖want‖.
func relDiff(got, want []float64) float64 {
	return floats.Distance(got, want, 2) / floats.Norm(want, 2)
}

// TestNAGVACFisherForms checks both natural-gradient forms against the Fisher built from its trace definition:
// the exact form is F⁻¹g for the whole (b, c) block; deepGLM's form applies the exact F_cc block alone to g_c and
// Σ/(2(1 − α)) to g_b; both give Σg_μ for μ. Tolerance 1e-10 relative (dense inverse of a well-conditioned Σ).
func TestNAGVACFisherForms(t *testing.T) {
	for _, d := range []int{3, 5, 9} {
		c := rng.Counter{Seed: uint64(d), Stream: 11}
		bv, cv, g := make([]float64, d), make([]float64, d), make([]float64, 3*d)
		c.FillNormal(bv)
		c.Advance(d).FillNormal(g)
		c.Advance(4 * d).FillUniform(cv)
		for i := range cv {
			cv[i] = 0.3 + cv[i]
		}
		w, kappa := factorWeights(bv, cv)
		f := fisherByTrace(t, bv, cv)
		var want mat.VecDense
		if err := want.SolveVec(f, mat.NewVecDense(2*d, append([]float64(nil), g[d:]...))); err != nil {
			t.Fatal(err)
		}
		exact, err := nagvacNatural(FisherExact, 0, bv, cv, w, kappa, g)
		if err != nil {
			t.Fatal(err)
		}
		if e := relDiff(exact[d:], want.RawVector().Data); e > 1e-10 {
			t.Errorf("d = %d: exact (b, c) natural gradient off F⁻¹g by %.2e", d, e)
		}
		approx, err := nagvacNatural(FisherDeepGLM, 0, bv, cv, w, kappa, g)
		if err != nil {
			t.Fatal(err)
		}
		// μ: Σg_μ; b: Σg_b/(2(1 − α)) with 1 − α = κ/(1 + κ); c: F_cc⁻¹g_c with the trace-built block.
		alpha := 1 / (1 + kappa)
		sgm, sgb := make([]float64, d), make([]float64, d)
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				s := bv[i] * bv[j]
				if i == j {
					s += cv[i] * cv[i]
				}
				sgm[i] += s * g[j]
				sgb[i] += s * g[d+j] / (2 * (1 - alpha))
			}
		}
		var fcc mat.VecDense
		if err := fcc.SolveVec(f.Slice(d, 2*d, d, 2*d), mat.NewVecDense(d, append([]float64(nil), g[2*d:]...))); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name      string
			got, want []float64
		}{
			{"exact μ", exact[:d], sgm}, {"deepGLM μ", approx[:d], sgm},
			{"deepGLM b", approx[d : 2*d], sgb}, {"deepGLM c", approx[2*d:], fcc.RawVector().Data},
		} {
			if e := relDiff(c.got, c.want); e > 1e-10 {
				t.Errorf("d = %d: %s off its reference by %.2e", d, c.name, e)
			}
		}
		{
			t.Logf("d = %d: deepGLM (b, c) differs from the exact natural gradient by %.1f%%", d, 100*relDiff(approx[d:], want.RawVector().Data))
		}
	}
}

// TestNAGVACExactNeedsThree: at d = 2 the one-factor covariance is not identified (four parameters, three
// covariance entries) and the exact Fisher is singular, so the exact form is refused before iterating.
func TestNAGVACExactNeedsThree(t *testing.T) {
	b := testbackend.Open(t)
	m := newLin(t, b, 20, 2, 1)
	cfg := NAGVACDefault()
	cfg.Fisher = FisherExact
	_, err := runNAGVAC(b, m, make([]float64, 2), []float64{0.01, 0.02}, []float64{0.2, 0.2}, cfg, run.Control{MaxIter: 3})
	if !errors.Is(err, run.ErrConfig) || !strings.Contains(err.Error(), "d ≥ 3") {
		t.Fatalf("error %v, want ErrConfig naming d ≥ 3", err)
	}
	cfg.Fisher = FisherDeepGLM
	if _, err := runNAGVAC(b, m, make([]float64, 2), []float64{0.01, 0.02}, []float64{0.2, 0.2}, cfg, run.Control{MaxIter: 3}); err != nil {
		t.Fatalf("deepGLM form at d = 2 rejected: %v", err)
	}
}

// TestNAGVACExactUndamped: undamped, the exact natural gradient on German credit (seed 1, the example's start)
// collapses b onto one coordinate, where the Fisher is singular; the run must stop with an error that says so, not
// go on with a meaningless solve. With the default damping the same run completes.
func TestNAGVACExactUndamped(t *testing.T) {
	b := testbackend.Open(t)
	m := germanModel(t, b, true)
	d := m.Dim()
	b0, c0 := factorStart(d, 0.2)
	cfg := NAGVACDefault()
	cfg.Fisher, cfg.Seed, cfg.Control.MaxIter, cfg.Tau = FisherExact, 1, 500, 500
	cfg.Damping = 0
	_, err := runNAGVAC(b, m, make([]float64, d), b0, c0, cfg, run.Control{})
	if !errors.Is(err, backend.ErrDomain) || !strings.Contains(err.Error(), "raise Damping") {
		t.Fatalf("undamped exact Fisher: error %v, want ErrDomain asking for damping", err)
	}
	cfg.Damping = NAGVACDefault().Damping
	if _, err := runNAGVAC(b, m, make([]float64, d), b0, c0, cfg, run.Control{}); err != nil {
		t.Fatalf("damped exact Fisher: %v", err)
	}
}

// factorStart returns a NAGVAC start in d dimensions: b₀ ~ N(0, 0.01²) from a fixed counter, c₀ = c.
func factorStart(d int, c float64) (b0, c0 []float64) {
	b0, c0 = make([]float64, d), make([]float64, d)
	rng.Counter{Seed: 1, Stream: 3}.FillNormal(b0)
	for i := range b0 {
		b0[i] *= 0.01
		c0[i] = c
	}
	return b0, c0
}

// TestNAGVACRQMC: with RQMC draws NAGVAC's lower-bound estimate at a fixed (μ, b, c) (step 10⁻¹², so the iterate
// does not move over the 300 iterations; German credit, d = 25, S = 100) has the mean of the pseudo-random one
// (within 4 standard errors of the difference: unbiased) and a variance at most a fifth of it (measured 0.028); an unknown source of
// draws is refused.
func TestNAGVACRQMC(t *testing.T) {
	b := testbackend.Open(t)
	m := germanModel(t, b, true)
	d := m.Dim()
	b0, c0 := factorStart(d, 0.1)
	const n = 300
	stats := func(draws Draws) (mean, vr float64) {
		cfg := NAGVACDefault()
		cfg.Seed, cfg.Control.MaxIter, cfg.Step, cfg.Draws = 7, n, 1e-12, draws
		var lb []float64
		ctl := run.Control{Recorder: run.Func(func(r run.Record) { lb = append(lb, r.Objective) })}
		if _, err := runNAGVAC(b, m, make([]float64, d), b0, c0, cfg, ctl); err != nil {
			t.Fatal(err)
		}
		if len(lb) != n {
			t.Fatalf("%d records, want %d", len(lb), n)
		}
		for _, v := range lb {
			mean += v / n
		}
		for _, v := range lb {
			vr += (v - mean) * (v - mean) / (n - 1)
		}
		return mean, vr
	}
	mp, vp := stats(PseudoRandom)
	mq, vq := stats(RQMC)
	se := math.Sqrt(vp/n + vq/n)
	t.Logf("LB estimate: Philox %.4f (sd %.4f), RQMC %.4f (sd %.4f); variance ratio %.3f, mean difference %.2f SE",
		mp, math.Sqrt(vp), mq, math.Sqrt(vq), vq/vp, (mq-mp)/se)
	if math.Abs(mq-mp) > 4*se {
		t.Errorf("RQMC mean %v, Philox %v: %.1f standard errors apart", mq, mp, math.Abs(mq-mp)/se)
	}
	if vq > 0.2*vp {
		t.Errorf("RQMC variance %v not below a fifth of Philox's %v", vq, vp)
	}
	cfg := NAGVACDefault()
	cfg.Draws = 7
	if _, err := runNAGVAC(b, m, make([]float64, d), b0, c0, cfg, run.Control{}); !errors.Is(err, run.ErrConfig) {
		t.Errorf("unknown draws: error %v, want ErrConfig", err)
	}
}
