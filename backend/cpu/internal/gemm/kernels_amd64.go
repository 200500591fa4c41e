package gemm

import "github.com/klauspost/cpuid/v2"

//go:generate go run gen_kernels.go

//go:noescape
func avx512Kern8x8(k int, a *float64, as int, b *float64, bs int, c *float64, ldc int, alpha, beta float64)

//go:noescape
func avx512Kern8x16(k int, a *float64, as int, b *float64, bs int, c *float64, ldc int, alpha, beta float64)

//go:noescape
func avx512Kern8x24(k int, a *float64, as int, b *float64, bs int, c *float64, ldc int, alpha, beta float64)

//go:noescape
func avx2Kern4x4(k int, a *float64, as int, b *float64, bs int, c *float64, ldc int, alpha, beta float64)

//go:noescape
func avx2Kern4x8(k int, a *float64, as int, b *float64, bs int, c *float64, ldc int, alpha, beta float64)

//go:noescape
func avx2Kern4x12(k int, a *float64, as int, b *float64, bs int, c *float64, ldc int, alpha, beta float64)

//go:noescape
func avx512Trsm8(nb int, t *float64, w *float64, ldw, n int, alpha float64)

//go:noescape
func avx512Trsm32(nb int, t *float64, w *float64, ldw, n int, alpha float64)

//go:noescape
func avx2Trsm4(nb int, t *float64, w *float64, ldw, n int, alpha float64)

//go:noescape
func avx2Trsm16(nb int, t *float64, w *float64, ldw, n int, alpha float64)

//go:noescape
func copyPanels4(d *float64, ps int, s *float64, ld, np, kb int)

//go:noescape
func copyPanels8(d *float64, ps int, s *float64, ld, np, kb int)

//go:noescape
func copyPanels12(d *float64, ps int, s *float64, ld, np, kb int)

//go:noescape
func copyPanels16(d *float64, ps int, s *float64, ld, np, kb int)

//go:noescape
func copyPanels24(d *float64, ps int, s *float64, ld, np, kb int)

//go:noescape
func transpose4(d *float64, dw int, s *float64, ld int, rows, kb int)

//go:noescape
func prefetchRows(s *float64, ld, rows, cols int)

// Block sizes for Zen 5 (48 KiB L1D, 1 MiB L2 per core, 32 MiB L3): Ã is 192×256 doubles (384 KiB, in L2), B̃
// at most 256×2016 (4 MiB, in L3). kc = 128 to 512 and mc = 96 to 384 measured within noise of these.
var avx512Set = &kernelSet{
	name: "AVX-512 8×24", mr: 8, vl: 8, nv: 3,
	fn: [4]microKernel{nil, avx512Kern8x8, avx512Kern8x16, avx512Kern8x24},
	kc: 256, mc: 192, nc: 2016,
	trsm: [2]trsmKernel{avx512Trsm8, avx512Trsm32}, trsmR: 4, trsmU: 4,
}

var avx2Set = &kernelSet{
	name: "AVX2 4×12", mr: 4, vl: 4, nv: 3,
	fn: [4]microKernel{nil, avx2Kern4x4, avx2Kern4x8, avx2Kern4x12},
	kc: 256, mc: 192, nc: 2016,
	trsm: [2]trsmKernel{avx2Trsm4, avx2Trsm16}, trsmR: 2, trsmU: 4,
}

func init() {
	useAVX512 = cpuid.CPU.Supports(cpuid.AVX512F)
	useAVX2 = cpuid.CPU.Supports(cpuid.AVX2, cpuid.FMA3)
}

// copyPanels sets d[q·ps + p·w + j] = s[p·ld + q·w + j] for q < np, p < kb, j < w; np, kb ≥ 1.
func copyPanels(d []float64, ps, w int, s []float64, ld, np, kb int) {
	// The assembly does not check bounds; these do.
	_ = d[(np-1)*ps+kb*w-1]
	_ = s[(kb-1)*ld+np*w-1]
	switch w {
	case 24:
		copyPanels24(&d[0], ps, &s[0], ld, np, kb)
	case 16:
		copyPanels16(&d[0], ps, &s[0], ld, np, kb)
	case 12:
		copyPanels12(&d[0], ps, &s[0], ld, np, kb)
	case 8:
		copyPanels8(&d[0], ps, &s[0], ld, np, kb)
	case 4:
		copyPanels4(&d[0], ps, &s[0], ld, np, kb)
	default:
		copyPanelsGo(d, ps, w, s, ld, np, kb)
	}
}

// interleave sets d[p·w+r] = s[off+r·ld+p] for r < h, p < kb ≥ 1, and zeroes d[p·w+r] for h ≤ r < w: blocks of
// 4×4 go through registers, the ragged edges through Go.
func interleave(d []float64, w int, s []float64, ld, off, h, kb int) {
	h4, k4 := h&^3, kb&^3
	if h4 == 0 || k4 == 0 {
		interleaveGo(d, w, s, ld, off, h, kb)
		return
	}
	_ = d[w*kb-1]
	_ = s[off+(h-1)*ld+kb-1]
	transpose4(&d[0], w, &s[off], ld, h4, k4)
	if k4 < kb {
		interleaveGo(d[k4*w:], w, s, ld, off+k4, h4, kb-k4)
	}
	if h4 < h {
		for r := h4; r < h; r++ {
			row := s[off+r*ld:][:kb]
			for p, v := range row {
				d[p*w+r] = v
			}
		}
	}
	if h < w {
		for p := 0; p < kb; p++ {
			clear(d[p*w+h : p*w+w])
		}
	}
}

// transpose sets d[q·dw + r] = s[r·ld + q] for r < rows, q < cols: blocks of 4×4 through registers, the ragged
// edges through Go.
func transpose(d []float64, dw int, s []float64, ld, rows, cols int) {
	r4, c4 := rows&^3, cols&^3
	if r4 == 0 || c4 == 0 {
		transposeGo(d, dw, s, ld, rows, cols)
		return
	}
	_ = d[(c4-1)*dw+r4-1]
	_ = s[(r4-1)*ld+c4-1]
	transpose4(&d[0], dw, &s[0], ld, r4, c4)
	if c4 < cols {
		transposeGo(d[c4*dw:], dw, s[c4:], ld, r4, cols-c4)
	}
	if r4 < rows {
		transposeGo(d[r4:], dw, s[r4*ld:], ld, rows-r4, cols)
	}
}
