package vmath

import "github.com/klauspost/cpuid/v2"

// UseFMA reports that the CPU has AVX2 and FMA, so the functions of this package run the kernels of
// special_amd64.s four lanes at a time.
var UseFMA = cpuid.CPU.Supports(cpuid.AVX2, cpuid.FMA3)

// softplusAVX2, sigmoidAVX2 and tanhAVX2 write n (a positive multiple of 4) values and report whether any argument
// was outside the range the kernel takes or NaN (those lanes need the scalar function).
//
//go:noescape
func softplusAVX2(dst, src *float64, n int, alpha float64, consts *[34][4]uint64) bool

//go:noescape
func sigmoidAVX2(dst, src *float64, n int, alpha float64, consts *[34][4]uint64) bool

//go:noescape
func tanhAVX2(dst, src *float64, n int, alpha float64, consts *[34][4]uint64, coef *[19][4]uint64) bool

// expAVX2 writes exponentials of src into dst, four at a time, from the start of the row (n, a multiple of 4) up to
// the first group with an argument beyond ±708 or a NaN, and returns how many it wrote.
//
//go:noescape
func expAVX2(dst, src *float64, n int, consts *[15][4]uint64) int

// logAVX2 is expAVX2 for the logarithm: it stops at the first group with an argument that is not a positive normal
// number.
//
//go:noescape
func logAVX2(dst, src *float64, n int, consts *[18][4]uint64) int
