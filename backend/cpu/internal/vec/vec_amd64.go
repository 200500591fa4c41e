package vec

import "github.com/klauspost/cpuid/v2"

// UseFMA reports that the CPU has AVX2 and FMA, so Dot and Axpy use the kernels of vec_amd64.s.
var UseFMA = cpuid.CPU.Supports(cpuid.AVX2, cpuid.FMA3)

// dotFMA returns Σ x_i y_i; len(y) ≥ len(x).
//
//go:noescape
func dotFMA(x, y []float64) float64

// axpyFMA sets y += alpha·x; len(y) ≥ len(x).
//
//go:noescape
func axpyFMA(alpha float64, x, y []float64)

// UseAVX512 reports that the CPU also has AVX-512F, so AccTN and DotRows use the kernels of skinny512_amd64.s.
var UseAVX512 = UseFMA && cpuid.CPU.Supports(cpuid.AVX512F)
