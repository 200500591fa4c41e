// Package sggmcexp holds the experiments of paper 001 (Liu, Zhu & Song 2016) that run the samplers of algos/sggmc:
// the spherical admixture model on 20News-diff (RunSAM, Section 5.3) and the synthetic Bayesian mixture of two vMFs
// with its grid posterior (TwoVMF, SyntheticTwoVMF, Section 5.2). The examples sggmc-sam and sggmc-vmfmix and the
// reproductions (go test -run Repro) use them; they are not part of the library.
package sggmcexp

import "github.com/geovb/geovb/tensor"

// T is short for *tensor.Tensor.
type T = tensor.Tensor

// hostData returns the elements of a contiguous host tensor.
func hostData(t *T) []float64 {
	d, _, _, _ := t.Matrix(0)
	return d[:t.Len():t.Len()]
}
