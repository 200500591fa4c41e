package sam

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/geovb/geovb/datasets"
)

// gramTo writes G = ββᵀ (K×K, both triangles) for β K×V row-major.
func gramTo(G, beta []float64, K, V int) {
	blas64.Implementation().Dsyrk(blas.Upper, blas.NoTrans, K, V, 1, beta, V, 0, G, K)
	for i := 0; i < K; i++ {
		for j := 0; j < i; j++ {
			G[i*K+j] = G[j*K+i]
		}
	}
}

// projectTo writes y = βv_d (K) for the sparse document d, a gather of nnz·K.
func projectTo(y, beta []float64, K, V int, c *datasets.Corpus, d int) {
	ids, vals := c.Doc(d)
	for k := 0; k < K; k++ {
		row := beta[k*V : (k+1)*V]
		s := 0.0
		for i, id := range ids {
			s += row[id] * vals[i]
		}
		y[k] = s
	}
}

// quad returns θᵀGθ, writing Gθ into gt.
func quad(gt, G, th []float64, K int) float64 {
	q := 0.0
	for i := 0; i < K; i++ {
		s := 0.0
		row := G[i*K : (i+1)*K]
		for j, t := range th {
			s += row[j] * t
		}
		gt[i] = s
		q += th[i] * s
	}
	return q
}

// likAccum holds the K×K and S×K accumulations of the Gram-trick gradient.
type likAccum struct {
	T1, M2, gt []float64
}

// accumulate fills T1_s = Σ_n θ_sn/‖b_sn‖ and M2 = Σ_{s,n} (θ_snᵀy_s/‖b_sn‖³) θ_snθ_snᵀ from G, the S×K rows y_s and
// the S×N×K θ samples, where ‖b_sn‖² = θ_snᵀGθ_sn and b_snᵀv_s = θ_snᵀy_s. It returns
// Σ_{s,n} θ_snᵀy_s/‖b_sn‖ = Σ_{s,n} v_sᵀv̄(β,θ_sn).
func (a *likAccum) accumulate(G, Y, theta []float64, S, N, K int) float64 {
	if len(a.M2) != K*K || len(a.T1) != S*K {
		a.M2, a.gt, a.T1 = make([]float64, K*K), make([]float64, K), make([]float64, S*K)
	}
	clear(a.M2)
	clear(a.T1)
	tot := 0.0
	for s := 0; s < S; s++ {
		y, t1 := Y[s*K:(s+1)*K], a.T1[s*K:(s+1)*K]
		for n := 0; n < N; n++ {
			th := theta[(s*N+n)*K : (s*N+n+1)*K]
			nb := math.Sqrt(quad(a.gt, G, th, K))
			ty := dot(th, y)
			tot += ty / nb
			inv := 1 / nb
			w := ty * inv * inv * inv
			for k, t := range th {
				t1[k] += t * inv
				wt := w * t
				row := a.M2[k*K : (k+1)*K]
				for j, u := range th {
					row[j] += wt * u
				}
			}
		}
	}
	return tot
}

// likGradAdd adds f·∇_β Σ_{s,n} v_sᵀv̄(β,θ_sn) = f·(T1ᵀV_𝒮 − M2β) to g (K×V) (in the K×V layout:
// row k gets Σ_s T1[s,k] v_s − Σ_j M2[k,j] β_j).
func (a *likAccum) likGradAdd(g, beta []float64, K, V int, c *datasets.Corpus, docs []int, f float64) {
	for s, d := range docs {
		ids, vals := c.Doc(d)
		t1 := a.T1[s*K : (s+1)*K]
		for k := 0; k < K; k++ {
			row := g[k*V : (k+1)*V]
			w := f * t1[k]
			for i, id := range ids {
				row[id] += w * vals[i]
			}
		}
	}
	blas64.Implementation().Dgemm(blas.NoTrans, blas.NoTrans, K, V, K, -f, a.M2, K, beta, V, 1, g, V)
}
