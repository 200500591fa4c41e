package cholng

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/numtest"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/rng"
)

// blockPos maps each factor entry of λ (after μ) to its (row, col) in the dense d×d factor.
func blockPos(f *Block) [][2]int {
	var out [][2]int
	o := 0
	for _, s := range f.sizes {
		for a := 0; a < s; a++ {
			for b := 0; b <= a; b++ {
				out = append(out, [2]int{o + a, o + b})
			}
		}
		o += s
	}
	return out
}

func arrowPos(f *Arrow) [][2]int {
	var out [][2]int
	o := 0
	for _, s := range f.sizes {
		for a := 0; a < s; a++ {
			for b := 0; b <= a; b++ {
				out = append(out, [2]int{o + a, o + b})
			}
		}
		for a := 0; a < f.dG; a++ {
			for b := 0; b < s; b++ {
				out = append(out, [2]int{f.dl + a, o + b})
			}
		}
		o += s
	}
	for a := 0; a < f.dG; a++ {
		for b := 0; b <= a; b++ {
			out = append(out, [2]int{f.dl + a, f.dl + b})
		}
	}
	return out
}

// blockDense returns C (d×d row-major) with the diagonal exponentiated under LogDiag.
func blockDense(t testing.TB, f *Block) []float64 {
	lam := lambdaOf(t, f)
	d := f.d
	c := make([]float64, d*d)
	for k, ij := range blockPos(f) {
		v := lam[d+k]
		if ij[0] == ij[1] && f.LogDiag {
			v = math.Exp(v)
		}
		c[ij[0]*d+ij[1]] = v
	}
	return c
}

func lambdaOf(t testing.TB, f Sparse) []float64 {
	t.Helper()
	lam, err := f.Lambda()
	if err != nil {
		t.Fatal(err)
	}
	return lam
}

// setMuZ sets μ (keeping the factor) and z.
func setMuZ(t testing.TB, f Sparse, mu, z []float64) {
	t.Helper()
	lam := lambdaOf(t, f)
	copy(lam, mu)
	if err := f.SetLambda(lam); err != nil {
		t.Fatal(err)
	}
	if err := f.SetZ(z); err != nil {
		t.Fatal(err)
	}
}

// gradOf runs Gradient and returns the gradient in λ order with h and the norm².
func gradOf(t testing.TB, f Sparse, m model.Density, kind Kind) (g []float64, h, n2 float64) {
	t.Helper()
	h, n2, err := f.Gradient(m, kind)
	if err != nil {
		t.Fatal(err)
	}
	g, err = f.GradLambda()
	if err != nil {
		t.Fatal(err)
	}
	return g, h, n2
}

// thetaOf is θ of the last draw; vOf downloads v = T⁻¹g of the last Arrow gradient.
func thetaOf(f Sparse) []float64 { return append([]float64(nil), f.core().hthU[:f.Dim()]...) }

func vOf(t testing.TB, f *Arrow) []float64 {
	t.Helper()
	h, err := f.downFlat(f.v, f.dpad)
	if err != nil {
		t.Fatal(err)
	}
	return f.toUser(h)
}

func closeAfter(t testing.TB, f Sparse) { t.Cleanup(f.Close) }

// restrictedSolve solves the dense Fisher (test 2's independent construction) restricted to μ and the pattern
// entries pos against the Euclidean gradient eg (λ order).
func restrictedSolve(t *testing.T, d int, p Param, l []float64, pos [][2]int, eg []float64) []float64 {
	t.Helper()
	full := denseFisher(d, p, l)
	vi := map[[2]int]int{}
	for k, ij := range vechIdx(d) {
		vi[ij] = d + k
	}
	idx := make([]int, 0, d+len(pos))
	for k := 0; k < d; k++ {
		idx = append(idx, k)
	}
	for _, ij := range pos {
		idx = append(idx, vi[ij])
	}
	n := len(idx)
	F := mat.NewDense(n, n, nil)
	for a, ia := range idx {
		for b, ib := range idx {
			F.Set(a, b, full.At(ia, ib))
		}
	}
	var x mat.VecDense
	if err := x.SolveVec(F, mat.NewVecDense(n, append([]float64(nil), eg...))); err != nil {
		t.Fatal(err)
	}
	return x.RawVector().Data
}

// denseEuclid is the independent dense Euclidean gradient (§5, both parametrisations): C: (g, lower(g zᵀ)), g = ∇log p +
// C⁻ᵀz; T: (g, lower(−(θ−μ)vᵀ)), g = ∇log p + Tz, v = T⁻¹g; returned on pos. Also returns θ.
func denseEuclid(tg *gauss, p Param, mu, l, z []float64, pos [][2]int) (eg, theta, v []float64) {
	d := len(mu)
	L := mat.NewDense(d, d, append([]float64(nil), l...))
	zv := mat.NewVecDense(d, append([]float64(nil), z...))
	var w, x mat.VecDense
	var li mat.Dense
	if err := li.Inverse(L); err != nil {
		panic(err)
	}
	if p == Covariance {
		w.MulVec(L, zv)
		x.MulVec(li.T(), zv)
	} else {
		w.MulVec(li.T(), zv)
		x.MulVec(L, zv)
	}
	theta = make([]float64, d)
	for i := range theta {
		theta[i] = mu[i] + w.AtVec(i)
	}
	gp := make([]float64, d)
	tg.LogJoint(theta, gp)
	g := make([]float64, d)
	for i := range g {
		g[i] = gp[i] + x.AtVec(i)
	}
	eg = append(eg, g...)
	var vv mat.VecDense
	vv.MulVec(&li, mat.NewVecDense(d, g))
	v = vv.RawVector().Data
	for _, ij := range pos {
		if p == Covariance {
			eg = append(eg, g[ij[0]]*z[ij[1]])
		} else {
			eg = append(eg, -w.AtVec(ij[0])*v[ij[1]])
		}
	}
	return eg, theta, v
}

// maskArrow zeroes the entries of the dense d×d matrix l outside f's arrow pattern.
func maskArrow(f *Arrow, l []float64) {
	d := f.Dim()
	in := map[[2]int]bool{}
	for _, ij := range arrowPos(f) {
		in[ij] = true
	}
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			if !in[[2]int{i, j}] {
				l[i*d+j] = 0
			}
		}
	}
}

func randArrow(t *testing.T, be backend.Backend, r *rand.Rand) (*Arrow, *gauss) {
	n, dG := 1+r.IntN(4), 2+r.IntN(3)
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = 1 + r.IntN(3)
	}
	f, err := NewArrow(be, sizes, dG, 1)
	if err != nil {
		t.Fatal(err)
	}
	closeAfter(t, f)
	d := f.Dim()
	dense := randLower(r, d, true)
	maskArrow(f, dense)
	if err := f.SetDense(dense); err != nil {
		t.Fatal(err)
	}
	setMuZ(t, f, randVec(r, d), randVec(r, d))
	return f, &gauss{m: randVec(r, d), p: randSPD(r, d)}
}

// Acceptance tests 7 and 10 (sparse T): the Alg 2c natural gradient equals the dense Fisher restricted to the arrow
// pattern, solved against the Euclidean gradient (rel ≤ 1e-10); the Euclidean gradient equals the independent dense
// formula masked, θ and v = T⁻¹g agree with dense solves (≤ 1e-12); the Riemannian norm² equals ⟨ĝ, g̃⟩.
// Acceptance test 8 (guard): the dense natural formula masked to the pattern differs by rel > 1e-2.
func TestArrowNaturalEqualsRestrictedFisher(t *testing.T) {
	be := testbackend.Open(t)
	r := rand.New(rand.NewPCG(7, 8))
	minGuard := math.Inf(1)
	for rep := 0; rep < 12; rep++ {
		f, tg := randArrow(t, be, r)
		d, pos := f.Dim(), arrowPos(f)
		eg, _, _ := gradOf(t, f, tg, Euclidean)
		vE := vOf(t, f)
		ng, _, n2 := gradOf(t, f, tg, Natural)
		ip := 0.0
		for k := range eg {
			ip += eg[k] * ng[k]
		}
		if e := math.Abs(n2-ip) / math.Abs(ip); e > 1e-12 {
			t.Errorf("rep %d: Riemannian norm² %g, ⟨ĝ, g̃⟩ %g (rel %.2g)", rep, n2, ip, e)
		}
		tl, err := f.Dense()
		if err != nil {
			t.Fatal(err)
		}
		lam := lambdaOf(t, f)
		z := f.zHost(t)
		ref, theta, v := denseEuclid(tg, Precision, lam[:d], tl, z, pos)
		if e := numtest.MaxRel(eg, ref, 1); e > 1e-12 {
			t.Errorf("rep %d: Euclidean gradient vs dense masked formula: rel %.2g", rep, e)
		}
		if e := numtest.MaxRel(thetaOf(f), theta, 1); e > 1e-12 {
			t.Errorf("rep %d: θ rel %.2g", rep, e)
		}
		if e := numtest.MaxRel(vE, v, 1); e > 1e-12 {
			t.Errorf("rep %d: v = T⁻¹g (Euclidean path) rel %.2g", rep, e)
		}
		if e := numtest.MaxRel(vOf(t, f), v, 1); e > 1e-12 {
			t.Errorf("rep %d: v = T⁻¹∇log p + z (natural path) rel %.2g", rep, e)
		}
		sol := restrictedSolve(t, d, Precision, tl, pos, eg)
		if e := numtest.MaxRel(ng, sol, 1); e > 1e-10 {
			t.Errorf("rep %d (groups %v, dG %d): natural vs restricted Fisher solve: rel %.2g", rep, f.sizes, f.dG, e)
		}
		// Guard: dense Alg 2b natural gradient T·dbar(−lower(z vᵀ)) masked to the pattern.
		full := make([]float64, d*d)
		triDense(full, tl, d, z, v)
		masked := append([]float64(nil), sol[:d]...)
		for _, ij := range pos {
			masked = append(masked, full[ij[0]*d+ij[1]])
		}
		if len(f.sizes) >= 2 { // with one group the arrow pattern is dense, and masking is exact
			minGuard = min(minGuard, numtest.MaxRel(masked, sol, 1))
			if e := numtest.MaxRel(masked, ng, 1); e <= 1e-2 {
				t.Errorf("rep %d: the implementation agrees with the masked dense formula (rel %.2g)", rep, e)
			}
		}
	}
	if minGuard <= 1e-2 {
		t.Errorf("masked dense natural gradient agrees with the restricted solve to %.2g; the guard needs > 1e-2", minGuard)
	}
	t.Logf("guard: min rel difference of the masked dense formula %.3f", minGuard)
}

// zHost downloads z (the user's order).
func (c *sparseCore) zHost(t testing.TB) []float64 {
	t.Helper()
	h, err := c.downFlat(c.z, c.dpad)
	if err != nil {
		t.Fatal(err)
	}
	return c.toUser(h)
}

// triDense is the dense T H̿ (Lemma 1), row-major, from a dense lower T (independent of the packed scans).
func triDense(out, l []float64, d int, z, v []float64) {
	for a := 0; a < d; a++ {
		for b := 0; b <= a; b++ {
			s := 0.0
			for c := b; c <= a; c++ {
				s += l[a*d+c] * z[c]
			}
			out[a*d+b] = -v[b] * (s - 0.5*l[a*d+b]*z[b])
		}
	}
}

// Acceptance test 5 for Alg 2c: the Euclidean gradient equals central differences of θ(λ) times g (abs ≤ 1e-7).
func TestArrowEuclideanFiniteDifferences(t *testing.T) {
	be := testbackend.Open(t)
	r := rand.New(rand.NewPCG(3, 4))
	for rep := 0; rep < 5; rep++ {
		f, tg := randArrow(t, be, r)
		d := f.Dim()
		eg, _, _ := gradOf(t, f, tg, Euclidean)
		g := append([]float64(nil), eg[:d]...)
		lam := lambdaOf(t, f)
		thetaAt := func(l []float64) []float64 {
			if err := f.SetLambda(l); err != nil {
				t.Fatal(err)
			}
			if _, err := f.Eval(tg); err != nil {
				t.Fatal(err)
			}
			return thetaOf(f)
		}
		const h = 1e-6
		for k := d; k < f.NumParams(); k++ {
			old := lam[k]
			lam[k] = old + h
			tp := thetaAt(lam)
			lam[k] = old - h
			tm := thetaAt(lam)
			lam[k] = old
			fd := 0.0
			for i := range g {
				fd += (tp[i] - tm[i]) / (2 * h) * g[i]
			}
			if math.Abs(fd-eg[k]) > 1e-7*max(1, math.Abs(fd)) {
				t.Fatalf("rep %d entry %d: gradient %g, finite difference %g", rep, k, eg[k], fd)
			}
		}
	}
}

// Acceptance test 6 (and 10 for C): Alg 1c natural gradient equals the dense Fisher restricted to the block
// pattern, solved (rel ≤ 1e-10); Euclidean gradient equals the dense formula masked; norm is ‖g̃‖₂².
func TestBlockNaturalEqualsRestrictedFisher(t *testing.T) {
	be := testbackend.Open(t)
	r := rand.New(rand.NewPCG(5, 6))
	for _, sizes := range [][]int{{1, 3, 2}, {1, 2, 3, 4}, {4}, {1, 1, 1}, {2, 1, 4, 3}} {
		f, err := NewBlock(be, sizes, 1, false)
		if err != nil {
			t.Fatal(err)
		}
		closeAfter(t, f)
		for k, s := range sizes {
			if err := f.SetBlock(k, randLower(r, s, true)); err != nil {
				t.Fatal(err)
			}
		}
		d := f.Dim()
		mu, z := randVec(r, d), randVec(r, d)
		setMuZ(t, f, mu, z)
		tg := &gauss{m: randVec(r, d), p: randSPD(r, d)}
		eg, _, _ := gradOf(t, f, tg, Euclidean)
		ng, _, n2 := gradOf(t, f, tg, Natural)
		cl, pos := blockDense(t, f), blockPos(f)
		ref, _, _ := denseEuclid(tg, Covariance, mu, cl, z, pos)
		if e := numtest.MaxRel(eg, ref, 1); e > 1e-12 {
			t.Errorf("%v: Euclidean gradient rel %.2g", sizes, e)
		}
		sol := restrictedSolve(t, d, Covariance, cl, pos, eg)
		if e := numtest.MaxRel(ng, sol, 1); e > 1e-10 {
			t.Errorf("%v: natural vs restricted Fisher solve rel %.2g", sizes, e)
		}
		s2 := 0.0
		for _, x := range sol {
			s2 += x * x
		}
		if math.Abs(n2-s2) > 1e-12*s2 {
			t.Errorf("%v: norm² %g, want %g", sizes, n2, s2)
		}
	}
}

// Acceptance test 17: log-diagonal variant (§5's end, C′ with C′_ii = log C_ii; the Jacobian uses R̃_C, diagonal 1/C_ii). The natural gradient in ξ =
// (μ, C′) equals the dense restricted Fisher in ξ coordinates, F_ξ = R F_λ R, solved against the ξ Euclidean
// gradient; its diagonal component is H_ii/2 = a_i z_i/2 with a = Cᵀ∇log p + z computed densely.
func TestLogDiagNatural(t *testing.T) {
	be := testbackend.Open(t)
	r := rand.New(rand.NewPCG(9, 10))
	sizes := []int{2, 3, 1}
	f, err := NewBlock(be, sizes, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	closeAfter(t, f)
	for k, s := range sizes {
		c := randLower(r, s, false)
		if err := f.SetBlock(k, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.SetBlock(0, []float64{1, 0, 1, 0}); err == nil {
		t.Error("SetBlock accepted an entry above the diagonal")
	}
	d := f.Dim()
	z := randVec(r, d)
	setMuZ(t, f, randVec(r, d), z)
	tg := &gauss{m: randVec(r, d), p: randSPD(r, d)}
	eg, _, _ := gradOf(t, f, tg, Euclidean)
	ng, _, _ := gradOf(t, f, tg, Natural)
	cl, pos := blockDense(t, f), blockPos(f)
	full := denseFisher(d, Covariance, cl)
	vi := map[[2]int]int{}
	for k, ij := range vechIdx(d) {
		vi[ij] = d + k
	}
	idx, rs := []int{}, []float64{}
	for k := 0; k < d; k++ {
		idx, rs = append(idx, k), append(rs, 1)
	}
	for _, ij := range pos {
		idx = append(idx, vi[ij])
		if ij[0] == ij[1] {
			rs = append(rs, cl[ij[0]*d+ij[0]])
		} else {
			rs = append(rs, 1)
		}
	}
	n := len(idx)
	F := mat.NewDense(n, n, nil)
	for a := range idx {
		for b := range idx {
			F.Set(a, b, rs[a]*full.At(idx[a], idx[b])*rs[b])
		}
	}
	var x mat.VecDense
	if err := x.SolveVec(F, mat.NewVecDense(n, append([]float64(nil), eg...))); err != nil {
		t.Fatal(err)
	}
	if e := numtest.MaxRel(ng, x.RawVector().Data, 1); e > 1e-10 {
		t.Errorf("log-diagonal natural gradient vs F_ξ solve: rel %.2g", e)
	}
	gp := make([]float64, d)
	tg.LogJoint(thetaOf(f), gp)
	for k, ij := range pos {
		if ij[0] != ij[1] {
			continue
		}
		i := ij[0]
		a := z[i]
		for c := i; c < d; c++ {
			a += cl[c*d+i] * gp[c]
		}
		if want := a * z[i] / 2; math.Abs(ng[d+k]-want) > 1e-12*max(1, math.Abs(want)) {
			t.Errorf("diagonal %d: %g, want H_ii/2 = %g", i, ng[d+k], want)
		}
	}
}

// Acceptance test 13 (diagonal part) and 17 (positivity): mean-field Snngm on a Gaussian target reaches
// KL − KL* < 0.06, with and without the log-diagonal, and the log-diagonal keeps C_ii > 0 by construction.
func TestBlockMeanFieldConverges(t *testing.T) {
	be := testbackend.Open(t)
	r := rand.New(rand.NewPCG(11, 12))
	d := 20
	tg := &gauss{m: randVec(r, d), p: randSPD(r, d)}
	ones := make([]int, d)
	for i := range ones {
		ones[i] = 1
	}
	var chol mat.Cholesky
	if !chol.Factorize(tg.p) {
		t.Fatal("not SPD")
	}
	klStar := -chol.LogDet()
	for i := 0; i < d; i++ {
		klStar += math.Log(tg.p.At(i, i))
	}
	klStar /= 2
	for _, logDiag := range []bool{false, true} {
		f, err := NewBlock(be, ones, 0.1, logDiag)
		if err != nil {
			t.Fatal(err)
		}
		closeAfter(t, f)
		if _, err := fitSparseWith(f, tg, Config{Seed: 1, NoStop: true}, run.Control{MaxIter: 20000}, false); err != nil {
			t.Fatal(err)
		}
		// KL(q‖p) for q = N(μ, diag s²), p = N(m, P⁻¹).
		lam, cd := lambdaOf(t, f), blockDense(t, f)
		kl := -chol.LogDet()
		for i := 0; i < d; i++ {
			s := cd[i*d+i]
			if logDiag && !(s > 0) {
				t.Fatalf("log-diagonal C_%d = %g", i, s)
			}
			kl += -2*math.Log(math.Abs(s)) + tg.p.At(i, i)*s*s - 1
			for j := 0; j < d; j++ {
				kl += (lam[i] - tg.m[i]) * tg.p.At(i, j) * (lam[j] - tg.m[j])
			}
		}
		kl /= 2
		t.Logf("logDiag=%v: KL − KL* = %.4f", logDiag, kl-klStar)
		if kl-klStar >= 0.06 || kl-klStar < -1e-9 {
			t.Errorf("logDiag=%v: KL − KL* = %g, want in [0, 0.06)", logDiag, kl-klStar)
		}
	}
}

// Acceptance test 13 for Alg 2c: Snngm on a Gaussian target with an arrow-structured precision (so the family
// contains it) reaches KL < 0.02 in 20 000 iterations from T = 10·I.
func TestArrowSnngmConvergesGaussian(t *testing.T) {
	be := testbackend.Open(t)
	r := rand.New(rand.NewPCG(13, 14))
	f, err := UniformArrow(be, 6, 2, 3, 10)
	if err != nil {
		t.Fatal(err)
	}
	closeAfter(t, f)
	d := f.Dim()
	ref, _ := UniformArrow(be, 6, 2, 3, 1)
	closeAfter(t, ref)
	tl := randLower(r, d, false)
	maskArrow(ref, tl)
	for i := 0; i < d; i++ {
		tl[i*d+i] += 1
	}
	L := mat.NewDense(d, d, tl)
	var P mat.Dense
	P.Mul(L, L.T())
	ps := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			ps.SetSym(i, j, P.At(i, j))
		}
	}
	tg := &gauss{m: randVec(r, d), p: ps}
	if _, err := fitSparseWith(f, tg, Config{Seed: 2, NoStop: true}, run.Control{MaxIter: 20000}, false); err != nil {
		t.Fatal(err)
	}
	// KL(q‖p) with q precision TTᵀ: ½[tr(P Σ_q) − d − log|P| + log|Ω_q| + (μ−m)ᵀP(μ−m)].
	td, err := f.Dense()
	if err != nil {
		t.Fatal(err)
	}
	lam := lambdaOf(t, f)
	T := mat.NewDense(d, d, td)
	var Om, Sq, PS mat.Dense
	Om.Mul(T, T.T())
	if err := Sq.Inverse(&Om); err != nil {
		t.Fatal(err)
	}
	PS.Mul(ps, &Sq)
	var cp, cq mat.Cholesky
	cp.Factorize(ps)
	cq.Factorize(mat.NewSymDense(d, Om.RawMatrix().Data))
	kl := mat.Trace(&PS) - float64(d) - cp.LogDet() + cq.LogDet()
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			kl += (lam[i] - tg.m[i]) * ps.At(i, j) * (lam[j] - tg.m[j])
		}
	}
	kl /= 2
	t.Logf("Alg 2c Snngm KL = %.2g", kl)
	if kl >= 0.02 {
		t.Errorf("KL = %g, want < 0.02", kl)
	}
}

// Acceptance test 12 (expectation, statistical): at a random factor the MC mean of the factor natural gradient over
// 2e5 draws equals C·dbar(I + Cᵀ∇²log p C) (C family) and −T·dbar(I + T⁻¹∇²log p T⁻ᵀ) (T family, dense T as an
// arrow with no groups) entrywise within 5 MC standard errors.
func TestNaturalGradientExpectation(t *testing.T) {
	be := testbackend.Open(t)
	r := rand.New(rand.NewPCG(15, 16))
	const d, N = 4, 200000
	tg := &gauss{m: randVec(r, d), p: randSPD(r, d)}
	Hs := mat.NewDense(d, d, nil)
	Hs.Scale(-1, tg.p) // ∇²log p = −P
	for _, p := range []Param{Covariance, Precision} {
		l := randLower(r, d, true)
		var f Sparse
		var pos [][2]int
		if p == Covariance {
			b, _ := NewBlock(be, []int{d}, 1, false)
			if err := b.SetBlock(0, l); err != nil {
				t.Fatal(err)
			}
			f, pos = b, blockPos(b)
		} else {
			a, _ := NewArrow(be, nil, d, 1)
			if err := a.SetDense(l); err != nil {
				t.Fatal(err)
			}
			f, pos = a, arrowPos(a)
		}
		closeAfter(t, f)
		setMuZ(t, f, randVec(r, d), make([]float64, d))
		L := mat.NewDense(d, d, l)
		var M, tmp mat.Dense
		if p == Covariance {
			tmp.Mul(L.T(), Hs)
			M.Mul(&tmp, L)
		} else {
			var li mat.Dense
			if err := li.Inverse(L); err != nil {
				t.Fatal(err)
			}
			tmp.Mul(&li, Hs)
			M.Mul(&tmp, li.T())
		}
		for i := 0; i < d; i++ {
			M.Set(i, i, 0.5*(M.At(i, i)+1))
			for j := i + 1; j < d; j++ {
				M.Set(i, j, 0)
			}
		}
		var want mat.Dense
		want.Mul(L, &M)
		if p == Precision {
			want.Scale(-1, &want)
		}
		// Sums of the gradient and of its square accumulated on the backend over N draws of stream 0.
		c := f.core()
		acc1, _ := be.Alloc(c.gbuf.Shape())
		acc2, _ := be.Alloc(c.gbuf.Shape())
		sq, _ := be.Alloc(c.gbuf.Shape())
		defer be.Free(acc1)
		defer be.Free(acc2)
		defer be.Free(sq)
		ctr := rng.Counter{Seed: 16, Stream: uint64(p)}
		for s := 0; s < N; s++ {
			if err := f.Sample(ctr.Advance(s * d)); err != nil {
				t.Fatal(err)
			}
			if _, _, err := f.Gradient(tg, Natural); err != nil {
				t.Fatal(err)
			}
			if err := firstError(be.Axpby(acc1, 1, acc1, 1, c.gbuf), be.Mul(sq, c.gbuf, c.gbuf),
				be.Axpby(acc2, 1, acc2, 1, sq)); err != nil {
				t.Fatal(err)
			}
		}
		var s1, s2 []float64
		var e1, e2 error
		switch ff := f.(type) {
		case *Block:
			s1, e1 = ff.toLambda(acc1)
			s2, e2 = ff.toLambda(acc2)
		case *Arrow:
			s1, e1 = ff.toLambda(acc1)
			s2, e2 = ff.toLambda(acc2)
		}
		if err := firstError(e1, e2); err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for k, ij := range pos {
			m := s1[d+k] / N
			se := math.Sqrt((s2[d+k]/N - m*m) / N)
			z := math.Abs(m-want.At(ij[0], ij[1])) / se
			worst = max(worst, z)
			if z > 5 {
				t.Errorf("%v entry %v: MC mean %g, expected %g (%.1f se)", p, ij, m, want.At(ij[0], ij[1]), z)
			}
		}
		t.Logf("%v: worst deviation %.2f MC standard errors", p, worst)
	}
}

// Acceptance test 1: vech/unvech round-trip and the operator identities LLᵀ = I, (LNLᵀ)⁻¹ = 2I − LKLᵀ
// (Lemma 4(ii)), K vec A = vec Aᵀ, L vec A = vech A, D vech A = vec A (symmetric A), for d = 1..8 (≤ 1e-15).
func TestOperators(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	vec := func(a mat.Matrix) []float64 {
		rr, c := a.Dims()
		out := make([]float64, 0, rr*c)
		for j := 0; j < c; j++ {
			for i := 0; i < rr; i++ {
				out = append(out, a.At(i, j))
			}
		}
		return out
	}
	maxAbs := func(a, b []float64) float64 {
		m := 0.0
		for i := range a {
			m = max(m, math.Abs(a[i]-b[i]))
		}
		return m
	}
	for d := 1; d <= 8; d++ {
		n := d * (d + 1) / 2
		A := mat.NewDense(d, d, randVec(r, d*d))
		low := Unvech(Vech(A), d)
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				want := A.At(i, j)
				if j > i {
					want = 0
				}
				if low.At(i, j) != want {
					t.Fatalf("d=%d: unvech(vech A) (%d,%d) = %g, want %g", d, i, j, low.At(i, j), want)
				}
			}
		}
		L, K, D := Elimination(d), Commutation(d), Duplication(d)
		var LLt mat.Dense
		LLt.Mul(L, L.T())
		if !mat.EqualApprox(&LLt, eye(n), 1e-15) {
			t.Errorf("d=%d: LLᵀ ≠ I", d)
		}
		N := mat.NewDense(d*d, d*d, nil)
		N.Add(K, eye(d*d))
		N.Scale(0.5, N)
		var LN, LNL, LK, LKL, prod mat.Dense
		LN.Mul(L, N)
		LNL.Mul(&LN, L.T())
		LK.Mul(L, K)
		LKL.Mul(&LK, L.T())
		inv := mat.NewDense(n, n, nil)
		inv.Scale(2, eye(n))
		inv.Sub(inv, &LKL)
		prod.Mul(&LNL, inv)
		if !mat.EqualApprox(&prod, eye(n), 1e-15) {
			t.Errorf("d=%d: (LNLᵀ)(2I − LKLᵀ) ≠ I", d)
		}
		var kv, lv, dv mat.VecDense
		kv.MulVec(K, mat.NewVecDense(d*d, vec(A)))
		if e := maxAbs(kv.RawVector().Data, vec(A.T())); e > 1e-15 {
			t.Errorf("d=%d: K vec A ≠ vec Aᵀ (%g)", d, e)
		}
		lv.MulVec(L, mat.NewVecDense(d*d, vec(A)))
		if e := maxAbs(lv.RawVector().Data, Vech(A)); e > 1e-15 {
			t.Errorf("d=%d: L vec A ≠ vech A (%g)", d, e)
		}
		var S mat.Dense
		S.Add(A, A.T())
		dv.MulVec(D, mat.NewVecDense(n, Vech(&S)))
		if e := maxAbs(dv.RawVector().Data, vec(&S)); e > 1e-15 {
			t.Errorf("d=%d: D vech S ≠ vec S (%g)", d, e)
		}
	}
}

func eye(n int) *mat.Dense {
	m := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		m.Set(i, i, 1)
	}
	return m
}

// FitSparse checkpoint/resume continues bit for bit, and bad families are rejected.
func TestFitSparseCheckpointResume(t *testing.T) {
	be := testbackend.Open(t)
	r := rand.New(rand.NewPCG(19, 20))
	mk := func() *Arrow {
		f, err := UniformArrow(be, 3, 2, 2, 10)
		if err != nil {
			t.Fatal(err)
		}
		closeAfter(t, f)
		return f
	}
	d := mk().Dim()
	tg := &gauss{m: randVec(r, d), p: randSPD(r, d)}
	cfg := Config{Seed: 4, NoStop: true, EvalDraws: 50}
	full := mk()
	want, err := fitSparseWith(full, tg, cfg, run.Control{MaxIter: 3000}, false)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cp")
	a := mk()
	if _, err := fitSparseWith(a, tg, cfg, run.Control{MaxIter: 1500, CheckpointEvery: 1500, CheckpointPath: path}, false); err != nil {
		t.Fatal(err)
	}
	b := mk()
	got, err := fitSparseWith(b, tg, cfg, run.Control{MaxIter: 3000, CheckpointPath: path}, true)
	if err != nil {
		t.Fatal(err)
	}
	if got.LHat != want.LHat || numtest.MaxRel(got.Lambda, want.Lambda, 1) != 0 {
		t.Errorf("resumed run differs: L̂ %v vs %v", got.LHat, want.LHat)
	}
	// The same with Adam (second moments in the checkpoint).
	cfgA := Config{Seed: 5, NoStop: true, EvalDraws: 50, Optimizer: Adam, Kind: Euclidean}
	wantA, err := fitSparseWith(mk(), tg, cfgA, run.Control{MaxIter: 400}, false)
	if err != nil {
		t.Fatal(err)
	}
	pathA := filepath.Join(t.TempDir(), "cpa")
	if _, err := fitSparseWith(mk(), tg, cfgA, run.Control{MaxIter: 200, CheckpointEvery: 200, CheckpointPath: pathA}, false); err != nil {
		t.Fatal(err)
	}
	gotA, err := fitSparseWith(mk(), tg, cfgA, run.Control{MaxIter: 400, CheckpointPath: pathA}, true)
	if err != nil {
		t.Fatal(err)
	}
	if gotA.LHat != wantA.LHat || numtest.MaxRel(gotA.Lambda, wantA.Lambda, 1) != 0 {
		t.Errorf("resumed Adam run differs: L̂ %v vs %v", gotA.LHat, wantA.LHat)
	}
	if _, err := fitSparseWith(mk(), tg, cfg, run.Control{MaxIter: 400, CheckpointPath: pathA}, true); err == nil {
		t.Error("an Adam checkpoint resumed a Snngm run")
	}
	if _, err := NewArrow(be, []int{2, 0}, 2, 10); err == nil {
		t.Error("empty group accepted")
	}
	if _, err := NewBlock(be, []int{2}, 0, false); err == nil {
		t.Error("zero diagonal accepted")
	}
	bad := mk()
	dense, err := bad.Dense()
	if err != nil {
		t.Fatal(err)
	}
	dense[0*d+2] = 1 // group 0 row, group 1 column: outside the pattern
	if err := bad.SetDense(dense); err == nil {
		t.Error("entry outside the arrow pattern accepted")
	}
	lam := lambdaOf(t, bad)
	lam[d] = 0 // T_1's first diagonal entry
	if err := bad.SetLambda(lam); err == nil {
		t.Error("zero diagonal accepted by SetLambda")
	}
	lam[d] = math.NaN()
	if err := bad.SetLambda(lam); err == nil {
		t.Error("NaN accepted by SetLambda")
	}
	if err := bad.SetZ(make([]float64, d+1)); err == nil {
		t.Error("z of the wrong length accepted")
	}
}
