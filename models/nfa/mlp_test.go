package nfa

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/geovb/geovb/rng"
)

// TestPropKernelsMatchScalar runs forward and backward of one layer for two steps with the AVX kernels (four units or
// outputs at a time) and with the scalar functions alone, from the same weights and inputs, and requires every
// output bit for bit equal: the output moments, the Jacobians, and the gradients accumulated over both steps onto
// nonzero values. Shapes cover
// widths below, at and above multiples of 4 (the padded lanes and the scalar tail of the backward pass), the skip,
// an incoming ∂C/∂J, both moment rules, and inputs wide enough that the Gauss–Hermite residual is clamped for some
// units (counted: the clamped branch of nonlinBackBlock must be reached).
func TestPropKernelsMatchScalar(t *testing.T) {
	if !useAVX {
		t.Skip("no AVX kernels on this CPU: the scalar path is the only one")
	}
	defer func(v bool) { useAVX = v }(useAVX)
	r := rand.New(rng.NewSource(5, 9))
	cases, clamped := 0, 0
	for _, in := range []int{1, 2, 7, 8, 9} {
		for _, hid := range []int{1, 3, 4, 6, 9, 30} {
			for _, out := range []int{1, 3, 4, 7, 21} {
				for _, mo := range []Moments{Taylor, GaussHermite} {
					for _, wide := range []bool{false, true} {
						l := layer{in: in, hid: hid, out: out, skip: out == in}
						order := 9 + hid%2
						wm, wv := make([]float64, l.size()), make([]float64, l.size())
						for i := range wm {
							wm[i] = r.NormFloat64()
							wv[i] = 0.01 + 0.05*r.Float64()
						}
						// Two steps, as over a block of time steps: the weight gradients accumulate in p over both.
						var sm, sv, gxm, gxv [2][]float64
						for st := range 2 {
							sm[st], sv[st] = make([]float64, in), make([]float64, in)
							for j := range in {
								sm[st][j] = r.NormFloat64()
								sv[st][j] = 0.1 * r.Float64()
								if wide {
									sv[st][j] = 20 + 40*r.Float64()
								}
							}
							gxm[st], gxv[st] = make([]float64, out), make([]float64, out)
							for i := range out {
								gxm[st][i], gxv[st][i] = r.NormFloat64(), r.Float64()
							}
						}
						var gJ []float64
						if l.skip {
							gJ = make([]float64, out*in)
							for i := range gJ {
								gJ[i] = r.NormFloat64()
							}
						}
						start := make([]float64, 2*l.size()+2*in)
						for i := range start {
							start[i] = r.NormFloat64()
						}
						type result struct{ xm, xv, jx, gwm, gwv, gsm, gsv []float64 }
						pass := func(avx bool) result {
							useAVX = avx
							p := newProp(l, mo, order, nil)
							var res result
							p.setWeights(wm, wv)
							g := append([]float64(nil), start...)
							res.gwm, res.gwv = g[:l.size()], g[l.size():2*l.size()]
							res.gsm, res.gsv = g[2*l.size():2*l.size()+in], g[2*l.size()+in:]
							for st := range 2 {
								xm, xv := make([]float64, out), make([]float64, out)
								p.forward(sm[st], sv[st], xm, xv)
								res.xm, res.xv = append(res.xm, xm...), append(res.xv, xv...)
								res.jx = append(res.jx, p.jx...)
								p.backward(sm[st], sv[st], gxm[st], gxv[st], gJ, res.gsm, res.gsv)
								if avx && mo == GaussHermite {
									for h := range hid {
										if p.phw[h] == 0 {
											clamped++
										}
									}
								}
							}
							p.addWeightGrad(res.gwm, res.gwv)
							return res
						}
						k, s := pass(true), pass(false)
						cases++
						for _, c := range []struct {
							name string
							k, s []float64
						}{{"xm", k.xm, s.xm}, {"xv", k.xv, s.xv}, {"J", k.jx, s.jx}, {"∂wm", k.gwm, s.gwm},
							{"∂wv", k.gwv, s.gwv}, {"∂sm", k.gsm, s.gsm}, {"∂sv", k.gsv, s.gsv}} {
							for i := range c.s {
								if math.Float64bits(c.k[i]) != math.Float64bits(c.s[i]) {
									t.Fatalf("in %d, hid %d, out %d, %v, wide %v: %s[%d] = %v with the kernels, %v without",
										in, hid, out, mo, wide, c.name, i, c.k[i], c.s[i])
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d layers bit for bit; %d GH units clamped", cases, clamped)
	if clamped == 0 {
		t.Fatal("no clamped unit: the clamped branch was not reached")
	}
}
