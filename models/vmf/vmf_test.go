package vmf

import (
	"errors"
	"math"
	"sort"
	"testing"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// notesTable is a reference table computed independently with mpmath (50 digits).
var notesTable = []struct {
	p             int
	kappa         float64
	logc, a, logI float64
}{
	{2, 5, -5.1425588422318789, 0.89338313704408522, 3.3046817758225334},
	{2, 20, -19.42748749465362, 0.97467050788980713, 17.589610428244274},
	{3, 20, -18.842144792855354, 0.95000000000000001, 17.583195330018332},
	{10, 20, -14.387020815448522, 0.79551906786542478, 17.180564577617759},
	{100, 50, 75.321915356057089, 0.4150685852658482, 24.473358589454794},
	{5000, 1e4, 8738.1418375876751, 0.7808050955636692, 9683.8060859574418},
	{5000, 3e4, -8722.5215379267848, 0.92014689531835217, 29889.901570853508},
	{5000, 1e5, -75785.992992666297, 0.97531720442327167, 99962.101063603534},
	{5000, 2.1e5, -183947.87522530078, 0.98816842187540956, 209978.08472071674},
	{7702, 6e3, 21618.094330068678, 0.54643932377693789, 4797.3728677981724},
	{7702, 2e4, 11426.072977681287, 0.82583548082920434, 19624.689516840417},
	{7702, 3.06e5, -264415.55001649797, 0.98749581337109251, 305968.54590035348},
}

func TestNotesTable(t *testing.T) {
	for _, c := range notesTable {
		lc, err := LogNormalizer(c.p, c.kappa)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := A(c.p, c.kappa)
		li := LogBesselI(float64(c.p)/2-1, c.kappa)
		// Tolerances: 1e-12 absolute for small p, 1e-9 absolute in log c for ν ≥ 2499 (and
		// 1e-10 relative there, the bound), A to 1e-10 relative.
		tolLog := 1e-12
		if c.p >= 5000 {
			tolLog = math.Max(1e-9, 1e-10*math.Abs(c.logc))
			tolLog = math.Min(tolLog, 1e-10*math.Abs(c.logc)+1e-9)
		}
		if d := math.Abs(lc - c.logc); d > tolLog || d > 1e-10*math.Abs(c.logc) {
			t.Errorf("log c_%d(%g) = %.17g, want %.17g (Δ %.3g)", c.p, c.kappa, lc, c.logc, d)
		}
		if d := math.Abs(li - c.logI); d > tolLog {
			t.Errorf("log I_%g(%g) = %.17g, want %.17g (Δ %.3g)", float64(c.p)/2-1, c.kappa, li, c.logI, d)
		}
		if d := math.Abs(a-c.a) / c.a; d > 1e-10 {
			t.Errorf("A_%d(%g) = %.17g, want %.17g (rel %.3g)", c.p, c.kappa, a, c.a, d)
		}
	}
}

// Closed forms: c₃ = κ/(4π sinh κ); A₃ = coth κ − 1/κ; I_{1/2}(x) = √(2/(πx)) sinh x.
func TestClosedForms(t *testing.T) {
	for _, k := range []float64{1e-3, 0.1, 1, 7.5, 40, 300, 5000, 1e5} {
		// log sinh κ = κ + log1p(−e^{−2κ}) − log 2.
		lsinh := k + math.Log1p(-math.Exp(-2*k)) - math.Ln2
		want := math.Log(k) - math.Log(4*math.Pi) - lsinh
		got, _ := LogNormalizer(3, k)
		if d := math.Abs(got - want); d > 1e-12*math.Max(1, math.Abs(want)) {
			t.Errorf("log c_3(%g) = %.17g, want %.17g", k, got, want)
		}
		coth := 1 / math.Tanh(k)
		wantA := coth - 1/k
		if k < 1e-2 {
			wantA = k/3 - k*k*k/45 // series: cancellation in coth − 1/κ
		}
		a, _ := A(3, k)
		if d := math.Abs(a-wantA) / wantA; d > 1e-11 {
			t.Errorf("A_3(%g) = %.17g, want %.17g", k, a, wantA)
		}
	}
}

// The power series (all terms positive) is an independent reference for small orders and moderate x.
func TestSeries(t *testing.T) {
	for _, nu := range []float64{0, 0.5, 1, 4, 17.5, 49, 120, 199.5, 200, 350} {
		for _, x := range []float64{1e-4, 0.3, 2, 25, 100, 600, 2000} {
			want := logBesselISeries(nu, x)
			got := LogBesselI(nu, x)
			if d := math.Abs(got - want); d > 2e-12*math.Max(1, math.Abs(want)) {
				t.Errorf("log I_%g(%g) = %.17g, series %.17g (Δ %.3g)", nu, x, got, want, d)
			}
		}
	}
}

// d/dκ log c_p = −A_p and A', by central differences.
func TestDerivatives(t *testing.T) {
	for _, c := range []struct {
		p int
		k float64
	}{{2, 3}, {3, 20}, {10, 20}, {100, 50}, {5000, 3e4}, {7702, 6e3}} {
		h := 1e-4 * c.k
		lp, _ := LogNormalizer(c.p, c.k+h)
		lm, _ := LogNormalizer(c.p, c.k-h)
		fd := (lp - lm) / (2 * h)
		a, _ := A(c.p, c.k)
		if d := math.Abs(fd + a); d > 1e-6*a {
			t.Errorf("p=%d κ=%g: dlogc/dκ = %.12g, −A = %.12g", c.p, c.k, fd, -a)
		}
		ap, _ := A(c.p, c.k+h)
		am, _ := A(c.p, c.k-h)
		fdA := (ap - am) / (2 * h)
		dA, _ := APrime(c.p, c.k)
		if d := math.Abs(fdA - dA); d > 1e-6*math.Abs(dA)+1e-10*a/h {
			t.Errorf("p=%d κ=%g: A' = %.12g, finite difference %.12g", c.p, c.k, dA, fdA)
		}
	}
}

func TestBadInput(t *testing.T) {
	mu := []float64{1, 0, 0}
	for name, err := range map[string]error{
		"κ=0":     func() error { _, e := LogNormalizer(3, 0); return e }(),
		"κ<0":     func() error { _, e := A(3, -1); return e }(),
		"κ=NaN":   func() error { _, e := A(3, math.NaN()); return e }(),
		"p=1":     func() error { _, e := LogNormalizer(1, 2); return e }(),
		"offunit": func() error { _, e := LogPdf([]float64{1 + 2e-8, 0, 0}, mu, 1); return e }(),
		"mu":      func() error { _, e := NewSampler([]float64{1, 1, 0}, 1, rng.NewSource(1, 0)); return e }(),
		"rbar":    func() error { _, e := FitKappa(3, 1); return e }(),
	} {
		if !errors.Is(err, backend.ErrDomain) {
			t.Errorf("%s: error %v, want ErrDomain", name, err)
		}
	}
	if _, err := LogPdf([]float64{1 + 5e-9, 0, 0}, mu, 1); err != nil {
		t.Errorf("point within 1e-8 of the sphere rejected: %v", err)
	}
}

// The mixture target refuses points of another sphere, an empty batch, a wrong energy count and a negative noise
// variance with an error, and an infinite weight.
func TestMixtureBadInput(t *testing.T) {
	b := testbackend.Open(t)
	m, err := NewMixture([]float64{1, 2}, []float64{5, 5}, [][]float64{{1, 0, 0}, {0, 1, 0}})
	if err != nil {
		t.Fatal(err)
	}
	hgood := tensor.NewHost(2, 1, 3)
	hgood.Set(0, 0, 0, 1)
	hgood.Set(1, 0, 2, 1)
	good := testbackend.Upload(t, b, hgood)
	if err := m.GradU(b, testbackend.Alloc(t, b, 2, 1, 3), good, 0); err != nil {
		t.Fatalf("good points refused: %v", err)
	}
	// The bad points are allocated on b (every backend allocates zero-size tensors), so that the shape is all that
	// is wrong with them.
	bad := []*tensor.Tensor{testbackend.Alloc(t, b, 2, 1, 2), testbackend.Alloc(t, b, 0, 1, 3),
		testbackend.Alloc(t, b, 2, 2, 3)}
	for _, x := range bad {
		if err := m.GradU(b, testbackend.Alloc(t, b, 2, 1, 3), x, 0); !errors.Is(err, backend.ErrShape) {
			t.Errorf("GradU at %v: %v, want ErrShape", x.Shape(), err)
		}
		if err := m.U(b, make([]float64, 2), x); !errors.Is(err, backend.ErrShape) {
			t.Errorf("U at %v: %v, want ErrShape", x.Shape(), err)
		}
	}
	if err := m.U(b, make([]float64, 1), good); !errors.Is(err, backend.ErrShape) {
		t.Errorf("1 energy for 2 chains: %v, want ErrShape", err)
	}
	m.GradNoise = -1
	if err := m.GradU(b, testbackend.Alloc(t, b, 2, 1, 3), good, 0); !errors.Is(err, backend.ErrDomain) {
		t.Errorf("noise variance −1: %v, want ErrDomain", err)
	}
	if _, err := NewMixture([]float64{1, math.Inf(1)}, []float64{5, 5}, [][]float64{{1, 0}, {0, 1}}); !errors.Is(err, backend.ErrDomain) {
		t.Errorf("infinite weight: %v, want ErrDomain", err)
	}
}

func TestLogPdfNormalised(t *testing.T) {
	// On S¹: ∫ exp(log vMF(θ)) dθ = 1 by the trapezoidal rule (spectrally accurate for periodic integrands).
	mu := []float64{math.Cos(0.7), math.Sin(0.7)}
	const n = 2000
	s := 0.0
	for i := 0; i < n; i++ {
		th := 2 * math.Pi * float64(i) / n
		l, err := LogPdf([]float64{math.Cos(th), math.Sin(th)}, mu, 12)
		if err != nil {
			t.Fatal(err)
		}
		s += math.Exp(l)
	}
	s *= 2 * math.Pi / n
	if math.Abs(s-1) > 1e-12 {
		t.Errorf("∫ vMF on S¹ = %.15g", s)
	}
}

// Wood sampler: E[μᵀx] = A_p(κ) within 4 SE over 1e5 draws; unit norm to 1e-14.
func TestWoodMean(t *testing.T) {
	n := 100000
	if testing.Short() {
		n = 20000
	}
	for i, c := range []struct {
		p int
		k float64
	}{{3, 20}, {10, 20}, {5000, 3e4}, {2, 5}, {1000, 1}} {
		mu := make([]float64, c.p)
		mu[0] = 1
		s, err := NewSampler(mu, c.k, rng.NewSource(7, uint64(i)))
		if err != nil {
			t.Fatal(err)
		}
		var sum, sum2 float64
		for j := 0; j < n; j++ {
			w, _ := s.W()
			sum += w
			sum2 += w * w
		}
		m := sum / float64(n)
		se := math.Sqrt((sum2/float64(n) - m*m) / float64(n))
		a, _ := A(c.p, c.k)
		if math.Abs(m-a) > 4*se {
			t.Errorf("p=%d κ=%g: mean μᵀx = %.6f ± %.2g, A = %.6f", c.p, c.k, m, se, a)
		}
	}
	// Full draws: unit norm and μᵀx = w.
	mu := []float64{0.6, 0, -0.8, 0, 0}
	s, _ := NewSampler(mu, 50, rng.NewSource(3, 0))
	x := make([]float64, 5)
	for j := 0; j < 2000; j++ {
		s.Rand(x)
		ss := 0.0
		for _, v := range x {
			ss += v * v
		}
		if math.Abs(math.Sqrt(ss)-1) > 1e-14 {
			t.Fatalf("draw off the sphere by %.3g", math.Sqrt(ss)-1)
		}
	}
}

// KS test of w against the density ∝ e^{κw}(1−w²)^{(p−3)/2}, the CDF by Gauss–Legendre
// quadrature on many panels; p > 1e-3 required.
func TestWoodKS(t *testing.T) {
	for i, c := range []struct {
		p int
		k float64
	}{{3, 20}, {10, 20}, {4, 0.5}, {50, 100}} {
		mu := make([]float64, c.p)
		mu[0] = 1
		s, _ := NewSampler(mu, c.k, rng.NewSource(11, uint64(i)))
		const n = 20000
		ws := make([]float64, n)
		for j := range ws {
			ws[j], _ = s.W()
		}
		sort.Float64s(ws)
		cdf := wCDF(c.p, c.k)
		d := 0.0
		for j, w := range ws {
			f := cdf(w)
			d = math.Max(d, math.Max(f-float64(j)/n, float64(j+1)/n-f))
		}
		pv := ksPValue(math.Sqrt(n) * d)
		if pv < 1e-3 {
			t.Errorf("p=%d κ=%g: KS D = %.4g, p-value %.3g", c.p, c.k, d, pv)
		}
	}
}

// wCDF returns the CDF of w by composite 8-point Gauss–Legendre quadrature on a fine grid (log-space weights).
func wCDF(p int, k float64) func(float64) float64 {
	const panels = 4000
	xs := []float64{-0.9602898564975363, -0.7966664774136267, -0.5255324099163290, -0.1834346424956498,
		0.1834346424956498, 0.5255324099163290, 0.7966664774136267, 0.9602898564975363}
	ws := []float64{0.1012285362903763, 0.2223810344533745, 0.3137066458778873, 0.3626837833783620,
		0.3626837833783620, 0.3137066458778873, 0.2223810344533745, 0.1012285362903763}
	// Substitute w = 1 − 2u² ... keep it simple: uniform panels in w; endpoints are integrable singularities only
	// for p = 2, not used here.
	cum := make([]float64, panels+1)
	h := 2.0 / panels
	for i := 0; i < panels; i++ {
		a := -1 + float64(i)*h
		s := 0.0
		for j, x := range xs {
			w := a + h/2*(x+1)
			s += ws[j] * math.Exp(k*(w-1)+float64(p-3)/2*math.Log1p(-w*w))
		}
		cum[i+1] = cum[i] + s*h/2
	}
	tot := cum[panels]
	return func(w float64) float64 {
		i := int((w + 1) / h)
		if i >= panels {
			return 1
		}
		a := -1 + float64(i)*h
		// Partial panel by the same rule on [a, w].
		s := 0.0
		for j, x := range xs {
			u := a + (w-a)/2*(x+1)
			s += ws[j] * math.Exp(k*(u-1)+float64(p-3)/2*math.Log1p(-u*u))
		}
		return (cum[i] + s*(w-a)/2) / tot
	}
}

// ksPValue is the asymptotic Kolmogorov tail P(K > x) = 2 Σ (−1)^{j−1} e^{−2j²x²}.
func ksPValue(x float64) float64 {
	if x < 0.2 {
		return 1
	}
	s := 0.0
	for j := 1; j < 100; j++ {
		s += 2 * math.Pow(-1, float64(j-1)) * math.Exp(-2*float64(j*j)*x*x)
	}
	return math.Min(1, math.Max(0, s))
}

// FitKappa inverts A and recovers κ from samples.
func TestFitKappa(t *testing.T) {
	for _, c := range []struct {
		p int
		k float64
	}{{2, 0.01}, {3, 20}, {10, 20}, {100, 3}, {5000, 3e4}, {7702, 3.06e5}} {
		a, _ := A(c.p, c.k)
		k, err := FitKappa(c.p, a)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(k-c.k) > 1e-8*c.k {
			t.Errorf("FitKappa(%d, A(%g)) = %.15g", c.p, c.k, k)
		}
	}
	mu := make([]float64, 10)
	mu[0] = 1
	s, _ := NewSampler(mu, 20, rng.NewSource(5, 0))
	sum := make([]float64, 10)
	x := make([]float64, 10)
	const n = 50000
	for j := 0; j < n; j++ {
		s.Rand(x)
		for i := range x {
			sum[i] += x[i]
		}
	}
	r := 0.0
	for i := range sum {
		r += sum[i] * sum[i]
	}
	r = math.Sqrt(r) / n
	k, _ := FitKappa(10, r)
	if math.Abs(k-20) > 0.03*20 {
		t.Errorf("κ̂ = %g from %d draws of κ = 20", k, n)
	}
	if ang := math.Acos(sum[0] / (r * n)); ang > 0.01 {
		t.Errorf("mean direction error %g rad", ang)
	}
}
