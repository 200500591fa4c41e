package sam

import "github.com/geovb/geovb/datasets"

// Gram writes G = ββᵀ (K×K, both triangles) for topics β, K×V row-major. It is the Gram matrix every
// SAM computation works through; the variational baselines (algos/samvi) use it as the samplers do.
func Gram(G, beta []float64, K, V int) { gramTo(G, beta, K, V) }

// Project writes y_k = β_kᵀv_d (k = 1..K) for document d of c, a sparse gather of nnz_d·K.
func Project(y, beta []float64, K int, c *datasets.Corpus, d int) { projectTo(y, beta, K, c.V, c, d) }
