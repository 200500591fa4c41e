package mgvb

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/internal/datatest"
	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/models/logistic"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

func germanModel(t testing.TB, b backend.Backend, intercept bool) *logistic.Model {
	t.Helper()
	m, err := logistic.NewGerman(b, datatest.Require(t, "german-credit", "germancredit_numeric.txt"), intercept)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// linModel is Bayesian linear regression y = Xθ + e, e ~ N(0, s2 I), θ ~ N(0, p2 I): a conjugate model whose
// posterior is Gaussian, so the Gaussian-VB optimum is the posterior and ELBO* = log p(y).
type linModel struct {
	n, d       int
	s2, p2, yy float64
	gram, xty  *T // 1×d×d, 1×1×d (row)
	postMu     []float64
	postCov    *mat.SymDense
	logEv      float64
}

func newLin(t testing.TB, b backend.Backend, n, d int, seed uint64) *linModel {
	t.Helper()
	c := rng.Counter{Seed: seed, Stream: 7}
	x := make([]float64, n*d)
	c.FillNormal(x)
	e := make([]float64, n)
	c.Advance(n * d).FillNormal(e)
	y := make([]float64, n)
	for i := range y {
		for j := 0; j < d; j++ {
			y[i] += x[i*d+j] * float64(j+1) / float64(d)
		}
		y[i] += e[i]
	}
	m := &linModel{n: n, d: d, s2: 1, p2: 10}
	X := mat.NewDense(n, d, x)
	Y := mat.NewVecDense(n, y)
	g := mat.NewSymDense(d, nil)
	g.SymOuterK(1, X.T())
	var xty mat.VecDense
	xty.MulVec(X.T(), Y)
	m.yy = mat.Dot(Y, Y)
	// Posterior: Σ = (G/s2 + I/p2)⁻¹, μ = Σ Xᵀy/s2; log p(y) = log N(y; 0, s2 I + p2 XXᵀ).
	prec := mat.NewSymDense(d, nil)
	prec.ScaleSym(1/m.s2, g)
	for j := 0; j < d; j++ {
		prec.SetSym(j, j, prec.At(j, j)+1/m.p2)
	}
	var ch mat.Cholesky
	ch.Factorize(prec)
	m.postCov = mat.NewSymDense(d, nil)
	ch.InverseTo(m.postCov)
	var mu mat.VecDense
	mu.MulVec(m.postCov, &xty)
	mu.ScaleVec(1/m.s2, &mu)
	m.postMu = mu.RawVector().Data
	cov := mat.NewSymDense(n, nil)
	cov.SymOuterK(m.p2, X)
	for i := 0; i < n; i++ {
		cov.SetSym(i, i, cov.At(i, i)+m.s2)
	}
	var cc mat.Cholesky
	cc.Factorize(cov)
	var z mat.VecDense
	cc.SolveVecTo(&z, Y)
	m.logEv = -0.5*float64(n)*math.Log(2*math.Pi) - 0.5*cc.LogDet() - 0.5*mat.Dot(Y, &z)
	m.gram, _ = b.Alloc(tensor.Shape{Batch: 1, Rows: d, Cols: d})
	hg, _ := tensor.FromSlice(append([]float64(nil), g.RawSymmetric().Data...), 1, d, d)
	// RawSymmetric holds the upper triangle only; fill the full matrix.
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			hg.Set(0, i, j, g.At(i, j))
		}
	}
	b.Upload(m.gram, hg)
	m.xty, _ = b.Alloc(tensor.Shape{Batch: 1, Rows: 1, Cols: d})
	hx, _ := tensor.FromSlice(xty.RawVector().Data, 1, 1, d)
	b.Upload(m.xty, hx)
	return m
}

func (m *linModel) Dim() int { return m.d }

func (m *linModel) LogDensityBatch(b backend.Backend, lp, grad, theta *T) error {
	return m.eval(b, lp, grad, theta)
}

// eval: −(yᵀy − 2 cᵀθ + θᵀGθ)/(2 s2) − n/2 log 2πs2 − ‖θ‖²/(2p2) − d/2 log 2πp2.
func (m *linModel) eval(b backend.Backend, lp, grad, theta *T) error {
	gt, _ := b.Alloc(theta.Shape())
	defer b.Free(gt)
	if err := b.Gemm(blas.NoTrans, blas.NoTrans, 1, m.gram, theta, 0, gt); err != nil {
		return err
	}
	tmp, _ := b.Alloc(theta.Shape())
	defer b.Free(tmp)
	b.Mul(tmp, gt, theta)
	q, _ := b.Alloc(lp.Shape())
	defer b.Free(q)
	b.Reduce(q, backend.ReduceSum, backend.AxisRows, tmp)
	b.Gemm(blas.NoTrans, blas.NoTrans, 1/m.s2, m.xty, theta, 0, lp)
	b.Axpby(lp, 1, lp, -0.5/m.s2, q)
	b.Reduce(q, backend.ReduceSumSq, backend.AxisRows, theta)
	b.Axpby(lp, 1, lp, -0.5/m.p2, q)
	b.Fill(q, -m.yy/(2*m.s2)-0.5*float64(m.n)*math.Log(2*math.Pi*m.s2)-0.5*float64(m.d)*math.Log(2*math.Pi*m.p2))
	b.Axpby(lp, 1, lp, 1, q)
	if grad == nil {
		return nil
	}
	// ∇ = (c − Gθ)/s2 − θ/p2.
	ones, _ := b.Alloc(tensor.Shape{Batch: 1, Rows: 1, Cols: theta.Cols()})
	defer b.Free(ones)
	b.Fill(ones, 1)
	b.Axpby(grad, -1/m.s2, gt, -1/m.p2, theta)
	return b.Gemm(blas.Trans, blas.NoTrans, 1/m.s2, m.xty, ones, 1, grad)
}

// eye returns s·I (d×d row-major).
func eye(d int, s float64) []float64 {
	x := make([]float64, d*d)
	for i := 0; i < d; i++ {
		x[i*d+i] = s
	}
	return x
}

func symOf(t *T, k int) *mat.SymDense {
	d := t.Rows()
	s := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			s.SetSym(i, j, t.At(k, i, j))
		}
	}
	return s
}

func vecOf(t *T, k int) []float64 {
	v := make([]float64, t.Rows())
	for i := range v {
		v[i] = t.At(k, i, 0)
	}
	return v
}

// symFrom wraps a row-major d×d symmetric matrix.
func symFrom(d int, x []float64) *mat.SymDense {
	s := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			s.SetSym(i, j, x[i*d+j])
		}
	}
	return s
}

// fitOne runs Fit for one fit from μ₀ and Σ₀ under ctl (its context when set).
func fitOne(b backend.Backend, m model.Batched, mu0, sigma0 []float64, cfg Config, ctl run.Control) (*Result, error) {
	cfg.InitMu, cfg.InitSigma, cfg.Control = mu0, sigma0, ctl
	return Fit(ctl.Ctx, b, m, cfg)
}

// fitBatch runs Fit for the fits whose starting points are the batch items of the host tensors mu0 (B×d×1) and
// sigma0 (B×d×d).
func fitBatch(b backend.Backend, m model.Batched, mu0, sigma0 *T, cfg Config, ctl run.Control) (*Result, error) {
	cfg.InitMu, cfg.InitSigma = hostValues(mu0), hostValues(sigma0)
	cfg.Control = ctl
	return Fit(ctl.Ctx, b, m, cfg)
}

func hostValues(t *T) []float64 {
	v := make([]float64, 0, t.Len())
	for k := 0; k < t.Batch(); k++ {
		for i := 0; i < t.Rows(); i++ {
			for j := 0; j < t.Cols(); j++ {
				v = append(v, t.At(k, i, j))
			}
		}
	}
	return v
}

// runNAGVAC runs NAGVAC from (μ₀, b₀, c₀) under ctl (with cfg's iteration cap when ctl has none).
func runNAGVAC(b backend.Backend, m model.Batched, mu0, b0, c0 []float64, cfg NAGVACConfig, ctl run.Control) (*NAGVACResult, error) {
	if ctl.MaxIter == 0 {
		ctl.MaxIter = cfg.Control.MaxIter
	}
	cfg.InitMu, cfg.InitB, cfg.InitC, cfg.Control = mu0, b0, c0, ctl
	return NAGVAC(ctl.Ctx, b, m, cfg)
}
