package lrvga

// Test access for the external tests (fig4_test.go), which use the references of internal/repro/lrvgaref.

// SetClosedForm replaces the probit closed-form expectations of the "logistic-extragrad" scheme by mom (nil: probit).
func SetClosedForm(f *Filter, mom func(a, nu float64) (m, c float64)) { f.closedForm = mom }

// GaussMoments is gaussMoments: E[σ(a)] and E[σ'(a)] for a ~ N(m, v) by quadrature.
var GaussMoments = gaussMoments

// Psi32 returns Linear32's current ψ.
func Psi32(f *Linear32) []float32 { return f.cur.psi }
