//go:build !amd64

package vmath

// UseFMA is false off amd64: every function of this package runs its scalar function.
var UseFMA = false

func softplusAVX2(dst, src *float64, n int, alpha float64, consts *[34][4]uint64) bool {
	panic("vmath: no softplus kernel")
}

func sigmoidAVX2(dst, src *float64, n int, alpha float64, consts *[34][4]uint64) bool {
	panic("vmath: no sigmoid kernel")
}

func tanhAVX2(dst, src *float64, n int, alpha float64, consts *[34][4]uint64, coef *[19][4]uint64) bool {
	panic("vmath: no tanh kernel")
}

func expAVX2(dst, src *float64, n int, consts *[15][4]uint64) int { panic("vmath: no exp kernel") }

func logAVX2(dst, src *float64, n int, consts *[18][4]uint64) int { panic("vmath: no log kernel") }
