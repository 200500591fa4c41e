package cholng

// The host implementation of the sparse families as it stood before they moved onto the backend: plain float64
// loops over one flat λ. It is kept as the test reference that the backend families (sparse.go) must reproduce to
// 1e-12 (TestSparseMatchesHost). Not used outside tests.

import (
	"fmt"
	"math"

	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/rng"
)

// hostBlock is the block-diagonal covariance family Σ = blockdiag(C_1 … C_N)(·)ᵀ of Alg 1c (§6). λ = (μ,
// packed lower C_1, …, packed lower C_N), each block row-major. With LogDiag the diagonal entries are stored as
// log C_ii (the C′ of §5's end; C_ii > 0 always).
type hostBlock struct {
	d, np   int
	sizes   []int
	zoff    []int // start of block k in θ
	poff    []int // start of block k in λ
	LogDiag bool

	lam, z, th, gp, a []float64
}

// newHostBlock makes the family with blocks of the given sizes, μ = 0 and C = diag0·I (diag0 > 0 with LogDiag).
func newHostBlock(sizes []int, diag0 float64, logDiag bool) (*hostBlock, error) {
	f := &hostBlock{sizes: append([]int(nil), sizes...), LogDiag: logDiag}
	for k, s := range sizes {
		if s < 1 {
			return nil, fmt.Errorf("cholng: block %d has size %d", k, s)
		}
		f.zoff = append(f.zoff, f.d)
		f.d += s
	}
	if f.d == 0 {
		return nil, fmt.Errorf("cholng: no blocks")
	}
	if diag0 == 0 || math.IsNaN(diag0) || math.IsInf(diag0, 0) || (logDiag && diag0 < 0) {
		return nil, fmt.Errorf("%w: initial diagonal %g", ErrFactor, diag0)
	}
	f.np = f.d
	for _, s := range sizes {
		f.poff = append(f.poff, f.np)
		f.np += s * (s + 1) / 2
	}
	f.lam = make([]float64, f.np)
	for k, s := range sizes {
		for a := 0; a < s; a++ {
			v := diag0
			if logDiag {
				v = math.Log(diag0)
			}
			f.lam[f.poff[k]+lowIdx(a, a)] = v
		}
	}
	f.z, f.th, f.gp, f.a = make([]float64, f.d), make([]float64, f.d), make([]float64, f.d), make([]float64, f.d)
	return f, nil
}

func (f *hostBlock) Dim() int          { return f.d }
func (f *hostBlock) NumParams() int    { return f.np }
func (f *hostBlock) Lambda() []float64 { return f.lam }
func (f *hostBlock) Z() []float64      { return f.z }
func (f *hostBlock) Param() Param      { return Covariance }

// C returns C_ab of block k (the exponentiated diagonal under LogDiag).
func (f *hostBlock) c(k, a, b int) float64 {
	v := f.lam[f.poff[k]+lowIdx(a, b)]
	if a == b && f.LogDiag {
		return math.Exp(v)
	}
	return v
}

// SetBlock sets block k from an s×s row-major lower-triangular matrix (tests).
func (f *hostBlock) SetBlock(k int, c []float64) error {
	s := f.sizes[k]
	for a := 0; a < s; a++ {
		for b := 0; b < s; b++ {
			v := c[a*s+b]
			if b > a && v != 0 {
				return fmt.Errorf("%w: entry (%d,%d) above the diagonal", ErrFactor, a, b)
			}
			if b > a {
				continue
			}
			if a == b {
				if v == 0 || (f.LogDiag && v < 0) {
					return fmt.Errorf("%w: diagonal %g", ErrFactor, v)
				}
				if f.LogDiag {
					v = math.Log(v)
				}
			}
			f.lam[f.poff[k]+lowIdx(a, b)] = v
		}
	}
	return nil
}

// draw sets θ = μ + Cz and returns log q(θ) = −(d/2)log2π − Σ log|C_ii| − ½zᵀz.
func (f *hostBlock) draw() float64 {
	logq := -0.5 * float64(f.d) * log2Pi
	for k, s := range f.sizes {
		o := f.zoff[k]
		for a := 0; a < s; a++ {
			x := f.lam[o+a]
			for b := 0; b <= a; b++ {
				x += f.c(k, a, b) * f.z[o+b]
			}
			f.th[o+a] = x
			logq -= math.Log(math.Abs(f.c(k, a, a))) + 0.5*f.z[o+a]*f.z[o+a]
		}
	}
	return logq
}

// Eval returns h(θ) for the current z.
func (f *hostBlock) Eval(m model.Density) (float64, error) {
	lq := f.draw()
	lp, err := m.LogDensity(f.gp, f.th)
	return lp - lq, err
}

// Gradient (see Sparse). Natural: per block a_k = C_kᵀ∇log p + z_k (no solve), μ part C_k a_k, factor
// part (C_k H̿_k)_ab = z_b(Σ_{c=b..a} C_ac a_c − ½C_ab a_b) by a reverse row scan; with LogDiag the diagonal part
// is pushed forward by (4): (C H̿)_aa / C_aa = a_a z_a / 2 (R̃_C's diagonal is 1/C_ii). Euclidean: g = ∇log p +
// C⁻ᵀz (STL), factor part lower(g zᵀ) per block (times C_aa on the log diagonal).
func (f *hostBlock) Gradient(m model.Density, kind Kind, grad []float64) (float64, float64, error) {
	if len(grad) != f.np {
		return 0, 0, fmt.Errorf("cholng: gradient buffer has %d entries, want %d", len(grad), f.np)
	}
	lq := f.draw()
	lp, err := m.LogDensity(f.gp, f.th)
	if err != nil {
		return 0, 0, err
	}
	h := lp - lq
	n2 := 0.0
	for k, s := range f.sizes {
		o, po := f.zoff[k], f.poff[k]
		z, a := f.z[o:o+s], f.a[o:o+s]
		if kind == Natural {
			for c := 0; c < s; c++ { // a = Cᵀ∇log p + z
				x := z[c]
				for r := c; r < s; r++ {
					x += f.c(k, r, c) * f.gp[o+r]
				}
				a[c] = x
			}
			for r := 0; r < s; r++ {
				x, acc := 0.0, 0.0
				for c := 0; c <= r; c++ {
					x += f.c(k, r, c) * a[c]
				}
				grad[r+o] = x
				for c := r; c >= 0; c-- {
					crc := f.c(k, r, c)
					acc += crc * a[c]
					gv := z[c] * (acc - 0.5*crc*a[c])
					if c == r && f.LogDiag {
						gv = 0.5 * a[r] * z[r]
					}
					grad[po+lowIdx(r, c)] = gv
				}
			}
		} else {
			for r := s - 1; r >= 0; r-- { // a = C⁻ᵀz (back substitution)
				x := z[r]
				for c := r + 1; c < s; c++ {
					x -= f.c(k, c, r) * a[c]
				}
				a[r] = x / f.c(k, r, r)
			}
			for r := 0; r < s; r++ {
				g := f.gp[o+r] + a[r]
				grad[o+r] = g
				for c := 0; c <= r; c++ {
					gv := g * z[c]
					if c == r && f.LogDiag {
						gv *= f.c(k, r, r)
					}
					grad[po+lowIdx(r, c)] = gv
				}
			}
		}
	}
	for _, v := range grad {
		n2 += v * v
	}
	return h, n2, nil
}

// hostArrow is the GLMM local–global sparse precision family of Alg 2c (§6, eq. (11)): Σ⁻¹ = TTᵀ with T
// lower triangular, diagonal blocks T_i (local, r_i×r_i) and T_G (global, d_G×d_G) and a last block row of dense
// T_Gi (d_G×r_i); θ = (b_1, …, b_n, θ_G). λ = (μ, [packed lower T_i, row-major T_Gi]_{i=1..n}, packed lower T_G):
// this order makes the Fisher block diagonal. Memory and work per iteration are O(Σ_i (r_i² + r_i d_G) + d_G²).
type hostArrow struct {
	d, dl, dG, np int
	sizes         []int
	zoff, poff    []int // start of b_i in θ; start of T_i in λ (T_Gi follows it)
	gpoff         int   // start of T_G in λ

	lam, z, th, gp, v, w, tmp []float64
	uG, sG, tGz, xG           []float64
}

// newHostArrow makes the family for local blocks of the given sizes and a global block of size dG, with μ = 0 and
// T = diag0·I (§8.2: T = 10·I). One size and a count can be given with uniformHostArrow.
func newHostArrow(sizes []int, dG int, diag0 float64) (*hostArrow, error) {
	if dG < 1 {
		return nil, fmt.Errorf("cholng: global block size %d < 1", dG)
	}
	if diag0 == 0 || math.IsNaN(diag0) || math.IsInf(diag0, 0) {
		return nil, fmt.Errorf("%w: initial diagonal %g", ErrFactor, diag0)
	}
	f := &hostArrow{dG: dG, sizes: append([]int(nil), sizes...)}
	f.zoff = make([]int, len(sizes))
	f.poff = make([]int, len(sizes))
	for i, s := range sizes {
		if s < 1 {
			return nil, fmt.Errorf("cholng: group %d has %d local variables", i, s)
		}
		f.zoff[i] = f.dl
		f.dl += s
	}
	f.d = f.dl + dG
	f.np = f.d
	for i, s := range sizes {
		f.poff[i] = f.np
		f.np += s*(s+1)/2 + dG*s
	}
	f.gpoff = f.np
	f.np += dG * (dG + 1) / 2
	f.lam = make([]float64, f.np)
	for i, s := range sizes {
		for a := 0; a < s; a++ {
			f.lam[f.poff[i]+lowIdx(a, a)] = diag0
		}
	}
	for a := 0; a < dG; a++ {
		f.lam[f.gpoff+lowIdx(a, a)] = diag0
	}
	mk := func(n int) []float64 { return make([]float64, n) }
	f.z, f.th, f.gp, f.v, f.w, f.tmp = mk(f.d), mk(f.d), mk(f.d), mk(f.d), mk(f.d), mk(f.d)
	f.uG, f.sG, f.tGz, f.xG = mk(dG), mk(dG), mk(dG), mk(dG)
	return f, nil
}

// uniformHostArrow is newHostArrow with n groups of r local variables each.
func uniformHostArrow(n, r, dG int, diag0 float64) (*hostArrow, error) {
	s := make([]int, n)
	for i := range s {
		s[i] = r
	}
	return newHostArrow(s, dG, diag0)
}

func (f *hostArrow) Dim() int          { return f.d }
func (f *hostArrow) NumParams() int    { return f.np }
func (f *hostArrow) Lambda() []float64 { return f.lam }
func (f *hostArrow) Z() []float64      { return f.z }
func (f *hostArrow) Param() Param      { return Precision }

// Groups returns the local block sizes; GlobalDim returns d_G.
func (f *hostArrow) Groups() []int  { return f.sizes }
func (f *hostArrow) GlobalDim() int { return f.dG }

// Dense returns T as a d×d row-major matrix (tests and diagnostics).
func (f *hostArrow) Dense() []float64 {
	d := f.d
	t := make([]float64, d*d)
	for i, s := range f.sizes {
		o, po := f.zoff[i], f.poff[i]
		for a := 0; a < s; a++ {
			for b := 0; b <= a; b++ {
				t[(o+a)*d+o+b] = f.lam[po+lowIdx(a, b)]
			}
		}
		tg := f.lam[po+s*(s+1)/2:]
		for a := 0; a < f.dG; a++ {
			for b := 0; b < s; b++ {
				t[(f.dl+a)*d+o+b] = tg[a*s+b]
			}
		}
	}
	for a := 0; a < f.dG; a++ {
		for b := 0; b <= a; b++ {
			t[(f.dl+a)*d+f.dl+b] = f.lam[f.gpoff+lowIdx(a, b)]
		}
	}
	return t
}

// SetDense sets T from a d×d row-major matrix, which must have the arrow pattern and a non-zero diagonal.
func (f *hostArrow) SetDense(t []float64) error {
	d := f.d
	if len(t) != d*d {
		return fmt.Errorf("cholng: factor has %d entries, want %d", len(t), d*d)
	}
	blk := make([]int, d) // block of each coordinate (n = global)
	for i, s := range f.sizes {
		for a := 0; a < s; a++ {
			blk[f.zoff[i]+a] = i
		}
	}
	for a := f.dl; a < d; a++ {
		blk[a] = len(f.sizes)
	}
	for a := 0; a < d; a++ {
		if t[a*d+a] == 0 || math.IsNaN(t[a*d+a]) || math.IsInf(t[a*d+a], 0) {
			return fmt.Errorf("%w: diagonal entry %d is %g", ErrFactor, a, t[a*d+a])
		}
		for b := 0; b < d; b++ {
			in := b <= a && (blk[a] == blk[b] || a >= f.dl)
			if !in && t[a*d+b] != 0 {
				return fmt.Errorf("%w: entry (%d,%d) = %g outside the arrow pattern", ErrFactor, a, b, t[a*d+b])
			}
		}
	}
	for i, s := range f.sizes {
		o, po := f.zoff[i], f.poff[i]
		for a := 0; a < s; a++ {
			for b := 0; b <= a; b++ {
				f.lam[po+lowIdx(a, b)] = t[(o+a)*d+o+b]
			}
		}
		tg := f.lam[po+s*(s+1)/2:]
		for a := 0; a < f.dG; a++ {
			for b := 0; b < s; b++ {
				tg[a*s+b] = t[(f.dl+a)*d+o+b]
			}
		}
	}
	for a := 0; a < f.dG; a++ {
		for b := 0; b <= a; b++ {
			f.lam[f.gpoff+lowIdx(a, b)] = t[(f.dl+a)*d+f.dl+b]
		}
	}
	return nil
}

// Packed lower-triangular helpers (row-major packed p of size s).
func lsolve(p []float64, s int, x []float64) { // x ← L⁻¹x
	for a := 0; a < s; a++ {
		v := x[a]
		for b := 0; b < a; b++ {
			v -= p[lowIdx(a, b)] * x[b]
		}
		x[a] = v / p[lowIdx(a, a)]
	}
}

func ltsolve(p []float64, s int, x []float64) { // x ← L⁻ᵀx
	for a := s - 1; a >= 0; a-- {
		v := x[a]
		for c := a + 1; c < s; c++ {
			v -= p[lowIdx(c, a)] * x[c]
		}
		x[a] = v / p[lowIdx(a, a)]
	}
}

func lmul(p []float64, s int, x, out []float64) { // out = Lx
	for a := 0; a < s; a++ {
		v := 0.0
		for b := 0; b <= a; b++ {
			v += p[lowIdx(a, b)] * x[b]
		}
		out[a] = v
	}
}

// draw sets θ by the block formulas of (11) (u_G = T_G⁻ᵀz_G, w_i = T_i⁻ᵀ(z_i − T_Giᵀu_G)) leaving w = θ − μ,
// and returns log q = −(d/2)log2π + Σ log|T_ii| − ½zᵀz (Appendix D with n for N).
func (f *hostArrow) draw() float64 {
	dG, dl := f.dG, f.dl
	tG := f.lam[f.gpoff:]
	copy(f.uG, f.z[dl:])
	ltsolve(tG, dG, f.uG)
	logq := -0.5 * float64(f.d) * log2Pi
	for a := 0; a < dG; a++ {
		logq += math.Log(math.Abs(tG[lowIdx(a, a)]))
		f.w[dl+a] = f.uG[a]
	}
	for i, s := range f.sizes {
		o, po := f.zoff[i], f.poff[i]
		ti, tgi := f.lam[po:], f.lam[po+s*(s+1)/2:]
		w := f.w[o : o+s]
		for b := 0; b < s; b++ {
			x := f.z[o+b]
			for a := 0; a < dG; a++ {
				x -= tgi[a*s+b] * f.uG[a]
			}
			w[b] = x
			logq += math.Log(math.Abs(ti[lowIdx(b, b)]))
		}
		ltsolve(ti, s, w)
	}
	for k, zk := range f.z {
		logq -= 0.5 * zk * zk
		f.th[k] = f.lam[k] + f.w[k]
	}
	return logq
}

// Eval returns h(θ) for the current z.
func (f *hostArrow) Eval(m model.Density) (float64, error) {
	lq := f.draw()
	lp, err := m.LogDensity(f.gp, f.th)
	return lp - lq, err
}

// Gradient (see Sparse).
//
// Natural (Appendix D / eq. (12), fused): v_i = T_i⁻¹∇_i log p + z_i, v_G = T_G⁻¹(∇_G log p −
// Σ_i T_Gi(v_i − z_i)) + z_G (= T⁻¹g with the STL g, so Tz is never formed); μ part Σg = T⁻ᵀv by x_G = T_G⁻ᵀv_G,
// x_i = T_i⁻ᵀ(v_i − T_Giᵀx_G); T_i part −v_ib(Σ_{c=b..a}(T_i)_ac z_ic − ½(T_i)_ab z_ib); T_Gi part
// −v_ib(Σ_{c≥b}(T_Gi)_ac z_ic − ½(T_Gi)_ab z_ib + (T_G z_G)_a) — note u_i = T_i⁻ᵀz_i enters, not w_i, and
// no contribution from other groups (which is what masking the dense formula would add); T_G part the dense scan
// with (z_G, v_G). Riemannian norm² = ‖v‖² + Σ_pattern,k>l z_k²v_l² + ½Σ z_k²v_k².
//
// Euclidean (masked dense G₂ = −(θ−μ)vᵀ, allowed for Euclidean gradients, (9)): g = ∇log p + Tz,
// v = T⁻¹g; T_i part lower(−w_i v_iᵀ), T_Gi part −u_G v_iᵀ, T_G part lower(−u_G v_Gᵀ).
func (f *hostArrow) Gradient(m model.Density, kind Kind, grad []float64) (float64, float64, error) {
	if len(grad) != f.np {
		return 0, 0, fmt.Errorf("cholng: gradient buffer has %d entries, want %d", len(grad), f.np)
	}
	lq := f.draw()
	lp, err := m.LogDensity(f.gp, f.th)
	if err != nil {
		return 0, 0, err
	}
	h := lp - lq
	dG, dl := f.dG, f.dl
	tG := f.lam[f.gpoff:]
	zG := f.z[dl:]
	v, n2 := f.v, 0.0
	clear(f.sG)
	if kind == Natural {
		// ṽ_i = T_i⁻¹∇_i log p; s_G = Σ T_Gi ṽ_i.
		for i, s := range f.sizes {
			o, po := f.zoff[i], f.poff[i]
			ti, tgi := f.lam[po:], f.lam[po+s*(s+1)/2:]
			vi := v[o : o+s]
			copy(vi, f.gp[o:o+s])
			lsolve(ti, s, vi)
			for a := 0; a < dG; a++ {
				x := 0.0
				for b := 0; b < s; b++ {
					x += tgi[a*s+b] * vi[b]
				}
				f.sG[a] += x
			}
			for b := 0; b < s; b++ {
				vi[b] += f.z[o+b]
			}
		}
		vG := v[dl:]
		for a := 0; a < dG; a++ {
			vG[a] = f.gp[dl+a] - f.sG[a]
		}
		lsolve(tG, dG, vG)
		for a := 0; a < dG; a++ {
			vG[a] += zG[a]
		}
		copy(f.xG, vG)
		ltsolve(tG, dG, f.xG)
		copy(grad[dl:dl+dG], f.xG)
		lmul(tG, dG, zG, f.tGz)
		zG2 := 0.0
		for a := 0; a < dG; a++ {
			zG2 += zG[a] * zG[a]
		}
		for i, s := range f.sizes {
			o, po := f.zoff[i], f.poff[i]
			nt := s * (s + 1) / 2
			ti, tgi := f.lam[po:], f.lam[po+nt:]
			gi, ggi := grad[po:po+nt], grad[po+nt:po+nt+dG*s]
			vi, zi := v[o:o+s], f.z[o:o+s]
			x := grad[o : o+s]
			for b := 0; b < s; b++ {
				y := vi[b]
				for a := 0; a < dG; a++ {
					y -= tgi[a*s+b] * f.xG[a]
				}
				x[b] = y
			}
			ltsolve(ti, s, x)
			triScan(gi, ti, s, zi, vi, 0)
			for a := 0; a < dG; a++ {
				acc := f.tGz[a]
				row := tgi[a*s : (a+1)*s]
				for b := s - 1; b >= 0; b-- {
					acc += row[b] * zi[b]
					ggi[a*s+b] = -vi[b] * (acc - 0.5*row[b]*zi[b])
				}
			}
			pre, vv := 0.0, 0.0
			for a := 0; a < s; a++ {
				z2, v2 := zi[a]*zi[a], vi[a]*vi[a]
				n2 += v2 + z2*pre + 0.5*z2*v2
				pre += v2
				vv += v2
			}
			n2 += zG2 * vv
		}
		triScan(grad[f.gpoff:], tG, dG, zG, vG, 0)
		pre := 0.0
		for a := 0; a < dG; a++ {
			z2, v2 := zG[a]*zG[a], vG[a]*vG[a]
			n2 += v2 + z2*pre + 0.5*z2*v2
			pre += v2
		}
		return h, n2, nil
	}
	// Euclidean: g = ∇log p + Tz into grad's μ part.
	g := grad[:f.d]
	copy(g, f.gp)
	lmul(tG, dG, zG, f.tGz)
	for a := 0; a < dG; a++ {
		g[dl+a] += f.tGz[a]
	}
	for i, s := range f.sizes {
		o, po := f.zoff[i], f.poff[i]
		ti, tgi := f.lam[po:], f.lam[po+s*(s+1)/2:]
		zi := f.z[o : o+s]
		lmul(ti, s, zi, f.tmp[:s])
		for b := 0; b < s; b++ {
			g[o+b] += f.tmp[b]
		}
		for a := 0; a < dG; a++ {
			for b := 0; b < s; b++ {
				g[dl+a] += tgi[a*s+b] * zi[b]
			}
		}
	}
	for i, s := range f.sizes { // v_i = T_i⁻¹g_i, s_G = Σ T_Gi v_i
		o, po := f.zoff[i], f.poff[i]
		ti, tgi := f.lam[po:], f.lam[po+s*(s+1)/2:]
		vi := v[o : o+s]
		copy(vi, g[o:o+s])
		lsolve(ti, s, vi)
		for a := 0; a < dG; a++ {
			for b := 0; b < s; b++ {
				f.sG[a] += tgi[a*s+b] * vi[b]
			}
		}
	}
	vG := v[dl:]
	for a := 0; a < dG; a++ {
		vG[a] = g[dl+a] - f.sG[a]
	}
	lsolve(tG, dG, vG)
	uG := f.w[dl:]
	for i, s := range f.sizes {
		o, po := f.zoff[i], f.poff[i]
		nt := s * (s + 1) / 2
		gi, ggi := grad[po:po+nt], grad[po+nt:po+nt+dG*s]
		vi, wi := v[o:o+s], f.w[o:o+s]
		for a := 0; a < s; a++ {
			for b := 0; b <= a; b++ {
				gi[lowIdx(a, b)] = -wi[a] * vi[b]
			}
		}
		for a := 0; a < dG; a++ {
			for b := 0; b < s; b++ {
				ggi[a*s+b] = -uG[a] * vi[b]
			}
		}
	}
	gg := grad[f.gpoff:]
	for a := 0; a < dG; a++ {
		for b := 0; b <= a; b++ {
			gg[lowIdx(a, b)] = -uG[a] * vG[b]
		}
	}
	for _, x := range grad {
		n2 += x * x
	}
	return h, n2, nil
}

// triScan writes (L H̿)_ab = −v_b(Σ_{c=b..a} L_ac z_c − ½L_ab z_b) + add for the T family (Lemma 1 in O(d²)), packed
// row-major, by a reverse cumulative sum along each row: O(s²).
func triScan(out, l []float64, s int, z, v []float64, add float64) {
	for a := 0; a < s; a++ {
		acc := add
		for b := a; b >= 0; b-- {
			lab := l[lowIdx(a, b)]
			acc += lab * z[b]
			out[lowIdx(a, b)] = -v[b] * (acc - 0.5*lab*z[b])
		}
	}
}

// hostFamily is the interface of the host families.
type hostFamily interface {
	Dim() int
	NumParams() int
	Lambda() []float64
	Z() []float64
	Gradient(m model.Density, kind Kind, grad []float64) (h, norm2 float64, err error)
	Eval(m model.Density) (float64, error)
}

// hostRun is the former host FitSparse loop body (Snngm or Adam on the flat λ, draws of stream 0 at offset t·d)
// for iters iterations without the stopping rule; it returns h of every iteration.
func hostRun(f hostFamily, m model.Density, cfg Config, iters int) []float64 {
	lam, np, d := f.Lambda(), f.NumParams(), f.Dim()
	grad, mo, so := make([]float64, np), make([]float64, np), make([]float64, np)
	alpha := cfg.Alpha
	if alpha == 0 {
		alpha = 0.001 * math.Sqrt(float64(np))
	}
	ctr := rng.Counter{Seed: cfg.Seed}
	var hs []float64
	for it := 0; it < iters; it++ {
		ctr.Advance(it * d).FillNormal(f.Z())
		h, n2, _ := f.Gradient(m, cfg.Kind, grad)
		hs = append(hs, h)
		t := float64(it + 1)
		if cfg.Optimizer == Snngm {
			inv := 0.0
			if n2 > 0 {
				inv = (1 - cfg.Beta) / math.Sqrt(n2)
			}
			sc := alpha / (1 - math.Pow(cfg.Beta, t))
			for k, g := range grad {
				mo[k] = cfg.Beta*mo[k] + inv*g
				lam[k] += sc * mo[k]
			}
		} else {
			bc1, bc2 := 1-math.Pow(cfg.Beta1, t), 1-math.Pow(cfg.Beta2, t)
			for k, g := range grad {
				mo[k] = cfg.Beta1*mo[k] + (1-cfg.Beta1)*g
				so[k] = cfg.Beta2*so[k] + (1-cfg.Beta2)*g*g
				lam[k] += cfg.LR / bc1 * mo[k] / (math.Sqrt(so[k]/bc2) + cfg.Eps)
			}
		}
	}
	return hs
}
