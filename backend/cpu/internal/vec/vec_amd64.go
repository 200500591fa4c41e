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
