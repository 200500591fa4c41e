// Package glm holds the streaming generalised-linear observation models of paper 002 (L-RVGA, Lambert, Bonnabel &
// Bach): the synthetic data recipes of its experiments (linear regression, Fig. 2, Sec. 5.2; logistic regression as
// a two-class Gaussian mixture, Figs. 3–4, Sec. 5.3–5.4, as the authors' code generates it) and the logistic model
// in the form the general nonlinear L-RVGA asks for (∂h/∂θ and Cov(y|θ), Sec. 4.2).
package glm

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/stablemath"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// Data is N observations: X (N×d, row-major) and y.
type Data struct {
	X, Y []float64
	N, D int
}

// Row returns x_n.
func (d *Data) Row(n int) []float64 { return d.X[n*d.D : (n+1)*d.D] }

// Design generates inputs x ~ N(0, C), C = Qᵀ Diag(v) Q with Q a Haar rotation and v_i = i^{−c}/Σ_j j^{−2c} (the
// authors' code's normalisation by the squared norm of the eigenvalue vector, not the trace the text suggests;
// condition number d^c). It
// holds Q (nil: the identity) and √v to draw from.
type Design struct {
	D     int
	Cond  float64 // c
	Q     *mat.Dense
	Sqrtv []float64
}

// NewDesign draws the rotation from stream 1 of seed.
func NewDesign(d int, c float64, seed uint64) *Design {
	r := rand.New(rng.NewSource(seed, 1))
	g := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			g.Set(i, j, r.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(g)
	var q, rr mat.Dense
	qr.QTo(&q)
	qr.RTo(&rr)
	// Sign fix (diag R > 0) makes Q Haar distributed.
	for j := 0; j < d; j++ {
		if rr.At(j, j) < 0 {
			for i := 0; i < d; i++ {
				q.Set(i, j, -q.At(i, j))
			}
		}
	}
	return &Design{D: d, Cond: c, Q: &q, Sqrtv: sqrtSpectrum(d, c)}
}

// sqrtSpectrum returns √v_i with v_i = i^{−c}/Σ_j j^{−2c}.
func sqrtSpectrum(d int, c float64) []float64 {
	v := make([]float64, d)
	s := 0.0
	for i := range v {
		v[i] = math.Pow(float64(i+1), -c)
		s += v[i] * v[i]
	}
	for i := range v {
		v[i] = math.Sqrt(v[i] / s)
	}
	return v
}

// NewDiagonalDesign is the design with the same spectrum and no rotation (Q = I, C = Diag(v)), for dimensions
// where a d×d rotation cannot be stored (d = 1e5 and up).
func NewDiagonalDesign(d int, c float64) *Design {
	return &Design{D: d, Cond: c, Sqrtv: sqrtSpectrum(d, c)}
}

// Cov returns C (d×d), for references at small d.
func (ds *Design) Cov() *mat.SymDense {
	d := ds.D
	c := mat.NewSymDense(d, nil)
	if ds.Q == nil {
		for i, v := range ds.Sqrtv {
			c.SetSym(i, i, v*v)
		}
		return c
	}
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			s := 0.0
			for k := 0; k < d; k++ {
				s += ds.Q.At(k, i) * ds.Sqrtv[k] * ds.Sqrtv[k] * ds.Q.At(k, j)
			}
			c.SetSym(i, j, s)
		}
	}
	return c
}

// draw writes x = Qᵀ Diag(√v) z + shift into dst.
func (ds *Design) draw(dst []float64, r *rand.Rand, shift []float64) {
	z := make([]float64, ds.D)
	for k := range z {
		z[k] = r.NormFloat64() * ds.Sqrtv[k]
	}
	if ds.Q == nil {
		copy(dst, z)
	} else {
		mat.NewVecDense(ds.D, dst).MulVec(ds.Q.T(), mat.NewVecDense(ds.D, z))
	}
	if shift != nil {
		for i := range dst {
			dst[i] += shift[i]
		}
	}
}

// Linear is the linear-regression recipe of Sec. 5.2 ((48)–(49)): θ* ~ U(−1,1)^d normalised to ‖θ*‖ = 1 and
// y = xᵀθ* + N(0, σ_w²). It returns the data and θ*.
func Linear(ds *Design, n int, sigmaW float64, seed uint64) (*Data, []float64) {
	d := ds.D
	r := rand.New(rng.NewSource(seed, 2))
	theta := make([]float64, d)
	s := 0.0
	for i := range theta {
		theta[i] = 2*r.Float64() - 1
		s += theta[i] * theta[i]
	}
	for i := range theta {
		theta[i] /= math.Sqrt(s)
	}
	out := &Data{X: make([]float64, n*d), Y: make([]float64, n), N: n, D: d}
	for t := 0; t < n; t++ {
		x := out.Row(t)
		ds.draw(x, r, nil)
		out.Y[t] = mat.Dot(mat.NewVecDense(d, x), mat.NewVecDense(d, theta)) + sigmaW*r.NormFloat64()
	}
	return out, theta
}

// LogisticMixture is the logistic recipe of the authors' code (Sec. 5.3 says the labels come
// from y_t = σ(μᵀx_t); the code draws a two-class Gaussian mixture): direction
// u ~ U(0,1)^d normalised, class 0 around +u s/2 and class 1 around −u s/2 with s = 1/d^{coefS}, shared
// covariance C, N/2 per class, shuffled. Labels are 0/1.
func LogisticMixture(ds *Design, n int, coefS float64, seed uint64) *Data {
	d := ds.D
	r := rand.New(rng.NewSource(seed, 3))
	u := make([]float64, d)
	s := 0.0
	for i := range u {
		u[i] = r.Float64()
		s += u[i] * u[i]
	}
	sep := 1 / math.Pow(float64(d), coefS)
	m0 := make([]float64, d)
	m1 := make([]float64, d)
	for i := range u {
		m0[i] = u[i] / math.Sqrt(s) * sep / 2
		m1[i] = -m0[i]
	}
	out := &Data{X: make([]float64, n*d), Y: make([]float64, n), N: n, D: d}
	perm := r.Perm(n)
	for t := 0; t < n; t++ {
		pos := perm[t]
		if t < n/2 {
			ds.draw(out.Row(pos), r, m0)
			out.Y[pos] = 0
		} else {
			ds.draw(out.Row(pos), r, m1)
			out.Y[pos] = 1
		}
	}
	return out
}

// Logistic is Bayesian logistic regression p(y=1|θ, x) = σ(xᵀθ) as an exponential family with η = h(θ, x) = xᵀθ
// (m = 1): ∂h/∂θ = x, T(y) − E[T|θ] = y − σ(xᵀθ), Cov(y|θ) = σ'(xᵀθ) (Sec. 4.2, (57)). It implements
// lrvga.Model and lrvga.ConstantJacobian.
type Logistic struct{}

// ConstantJacobian reports that ∂h/∂θ = x does not depend on θ, so the filter may use the one-column GGN factor.
func (Logistic) ConstantJacobian() bool { return true }

// Outputs is 1.
func (Logistic) Outputs() int { return 1 }

// Eval writes x into every column of jac and the residuals and variances of the K draws in theta.
func (Logistic) Eval(b backend.Backend, jac, theta, x *tensor.Tensor, y float64, res, cov []float64) error {
	k := theta.Cols()
	if jac.Cols() != k || len(res) != k || len(cov) != k {
		return fmt.Errorf("glm: logistic Eval: %d draws, jac %v, %d residuals, %d variances", k, jac.Shape(), len(res), len(cov))
	}
	a, err := b.Alloc(tensor.Shape{Batch: 1, Rows: k, Cols: 1})
	if err != nil {
		return err
	}
	defer b.Free(a)
	if err := b.Gemm(blas.Trans, blas.NoTrans, 1, theta, x, 0, a); err != nil { // a_i = θ_iᵀx
		return err
	}
	h := tensor.NewHost(1, k, 1)
	if err := b.Download(h, a); err != nil {
		return err
	}
	ones, err := b.Alloc(tensor.Shape{Batch: 1, Rows: 1, Cols: k})
	if err != nil {
		return err
	}
	defer b.Free(ones)
	if err := b.Fill(ones, 1); err != nil {
		return err
	}
	if err := b.Gemm(blas.NoTrans, blas.NoTrans, 1, x, ones, 0, jac); err != nil { // jac = x 1ᵀ
		return err
	}
	for i := 0; i < k; i++ {
		z := h.At(0, i, 0)
		s := stablemath.Sigmoid(z)
		res[i] = y - s
		cov[i] = s * stablemath.Sigmoid(-z)
	}
	return nil
}

// FactorInputs is the synthetic recipe of Fig. 1 (Sec. 5.1, App. C): ψ_true ~ U(0,1)^d, W_true ~ N(0,1)^{d×p},
// x_i ~ N(0, Diag(ψ_true) + W_true W_trueᵀ), each normalised to unit norm (inputs on the sphere). Rows of the
// result (N×d) are the inputs.
func FactorInputs(d, p, n int, seed uint64) []float64 {
	r := rand.New(rng.NewSource(seed, 4))
	sq := make([]float64, d)
	for i := range sq {
		sq[i] = math.Sqrt(r.Float64())
	}
	w := make([]float64, d*p)
	for i := range w {
		w[i] = r.NormFloat64()
	}
	x := make([]float64, n*d)
	z := make([]float64, p)
	for t := 0; t < n; t++ {
		for j := range z {
			z[j] = r.NormFloat64()
		}
		row := x[t*d : (t+1)*d]
		s := 0.0
		for i := range row {
			v := sq[i] * r.NormFloat64()
			for j, zj := range z {
				v += w[i*p+j] * zj
			}
			row[i] = v
			s += v * v
		}
		s = math.Sqrt(s)
		for i := range row {
			row[i] /= s
		}
	}
	return x
}
