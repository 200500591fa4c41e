package gemm

// packA copies rows [i0, i0+mb) and columns [p0, p0+kb) of op(A) into dst as panels of mr rows, each laid out
// step by step of k (mr values per step) and zero-padded past mb.
func packA(dst []float64, trans bool, a []float64, lda, i0, mb, p0, kb, mr int) {
	if trans {
		// op(A)[i][p] = a[p·lda+i]: each step of a panel is a contiguous run of a row of A.
		packRuns(dst, mr, mr, a[p0*lda+i0:], lda, mb, kb)
		return
	}
	// op(A)[i][p] = a[i·lda+p]: interleave the rows of A.
	for ir := 0; ir < mb; ir += mr {
		interleave(dst[ir*kb:ir*kb+mr*kb], mr, a, lda, (i0+ir)*lda+p0, min(mr, mb-ir), kb)
	}
}

// packB copies rows [p0, p0+kb) and columns [j0, j0+nb) of op(B) into dst as panels of nr columns (the last one
// rounded up to a multiple of vl), each laid out step by step of k and zero-padded past nb.
func packB(dst []float64, trans bool, b []float64, ldb, p0, kb, j0, nb, nr, vl int) {
	if !trans {
		// op(B)[p][j] = b[p·ldb+j]: each step of a panel is a contiguous run of a row of B.
		packRuns(dst, nr, vl, b[p0*ldb+j0:], ldb, nb, kb)
		return
	}
	// op(B)[p][j] = b[j·ldb+p]: interleave the rows of B.
	for jr := 0; jr < nb; jr += nr {
		wd := min(nr, nb-jr)
		wv := (wd + vl - 1) / vl * vl
		interleave(dst[jr*kb:jr*kb+wv*kb], wv, b, ldb, (j0+jr)*ldb+p0, wd, kb)
	}
}

// packRuns packs a kb×nb block of s (stride ld) into panels of w columns, step by step of k; the last panel is
// rounded up to a multiple of vl and zero-padded.
func packRuns(dst []float64, w, vl int, s []float64, ld, nb, kb int) {
	np := nb / w
	if np > 0 {
		copyPanels(dst, kb*w, w, s, ld, np, kb)
	}
	j := np * w
	if j == nb {
		return
	}
	wd := nb - j
	wv := (wd + vl - 1) / vl * vl
	d := dst[j*kb : j*kb+wv*kb]
	if wd == wv {
		copyPanels(d, 0, wv, s[j:], ld, 1, kb)
		return
	}
	for p := 0; p < kb; p++ {
		dp := d[p*wv : p*wv+wv]
		sp := s[p*ld+j : p*ld+j+wd]
		for i, v := range sp {
			dp[i] = v
		}
		for i := wd; i < wv; i++ {
			dp[i] = 0
		}
	}
}

// copyPanelsGo sets d[q·ps + p·w + j] = s[p·ld + q·w + j] for q < np, p < kb, j < w.
func copyPanelsGo(d []float64, ps, w int, s []float64, ld, np, kb int) {
	for q := 0; q < np; q++ {
		for p := 0; p < kb; p++ {
			copy(d[q*ps+p*w:q*ps+p*w+w], s[p*ld+q*w:p*ld+q*w+w])
		}
	}
}

// interleaveGo sets d[p·w+r] = s[off+r·ld+p] for r < h, p < kb, and zeroes d[p·w+r] for h ≤ r < w.
func interleaveGo(d []float64, w int, s []float64, ld, off, h, kb int) {
	d = d[:w*kb]
	for r := 0; r < h; r++ {
		row := s[off+r*ld:][:kb]
		for p, v := range row {
			d[p*w+r] = v
		}
	}
	if h < w {
		for p := 0; p < kb; p++ {
			clear(d[p*w+h : p*w+w])
		}
	}
}
