package cpu

import (
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/vmath"
	"github.com/geovb/geovb/tensor"
)

// The Gauss–Hermite tanh moments and their reverse pass (backend/gausshermite.go) in one pass over each row of H
// units: every node's values, the sums and the gradients are formed while the row is in L1, where the reference
// makes 5Q (forward) and 7Q (reverse) element-wise passes over the whole batch × R × H block. The operations and their
// order per element are the reference's, so the results differ from it only where tanh's vector kernel and its
// scalar tail split a row differently.

func init() {
	backend.GHTanhOp.Register(backend.Kernel[backend.GHTanhFunc]{
		Name: "cpu.gh.tanh.rows", Backend: Name, Priority: 10, Applies: isCPU, Fn: ghTanhRows,
	})
	backend.GHTanhBackOp.Register(backend.Kernel[backend.GHTanhBackFunc]{
		Name: "cpu.gh.tanh_back.rows", Backend: Name, Priority: 10, Applies: isCPU, Fn: ghTanhBackRows,
	})
}

// tanhRow sets v to tanh(v) as Map(Tanh) does.
func tanhRow(v []float64) {
	if vmath.UseFMA {
		vmath.Tanh(v, v, 1, func(x float64) float64 { return Unary(backend.Tanh, x) })
		return
	}
	for j, x := range v {
		v[j] = Unary(backend.Tanh, x)
	}
}

func ghTanhRows(be backend.Backend, m1, m2, u, y, sd, zw *tensor.Tensor) error {
	if err := checkHost("gh.tanh", []string{"m1", "m2", "u", "y", "sd", "zw"}, m1, m2, u, y, sd, zw); err != nil {
		return err
	}
	b := be.(*Backend)
	z, w := row(zw, 0, 0), row(zw, 0, 1)
	R, H := y.Rows(), y.Cols()
	ys, ss, m1s, m2s, us := rowsOf(y), rowsOf(sd), rowsOf(m1), rowsOf(m2), rowsOf(u)
	b.parallelWork(y.Batch()*R, float64(len(z)*H)*30, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			bb, i := r/R, r%R
			yr, sr, a1, a2 := ys.at(bb, i), ss.at(bb, i), m1s.at(bb, i), m2s.at(bb, i)
			clear(a1)
			clear(a2)
			for q := range z {
				ur := us.at(bb, q*R+i)
				for j := range ur {
					ur[j] = yr[j] + z[q]*sr[j]
				}
				tanhRow(ur)
				for j, v := range ur {
					a1[j] = w[q]*v + a1[j]
					a2[j] = w[q]*(v*v) + a2[j]
				}
			}
		}
	})
	return nil
}

func ghTanhBackRows(be backend.Backend, gy, gsum, u, gk, gm, zw *tensor.Tensor) error {
	if err := checkHost("gh.tanh_back", []string{"gy", "gsum", "u", "gk", "gm", "zw"}, gy, gsum, u, gk, gm, zw); err != nil {
		return err
	}
	b := be.(*Backend)
	z, w := row(zw, 0, 0), row(zw, 0, 1)
	R, H := gy.Rows(), gy.Cols()
	gys, gss, gks, gms, us := rowsOf(gy), rowsOf(gsum), rowsOf(gk), rowsOf(gm), rowsOf(u)
	b.parallelWork(gy.Batch()*R, float64(len(z)*H)*8, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			bb, i := r/R, r%R
			gyr, gsr, gkr, gmr := gys.at(bb, i), gss.at(bb, i), gks.at(bb, i), gms.at(bb, i)
			clear(gyr)
			clear(gsr)
			for q := range z {
				ur := us.at(bb, q*R+i)
				wz := w[q] * z[q]
				for j, v := range ur {
					d := (1 - v*v) * (gkr[j]*v + gmr[j])
					gyr[j] = w[q]*d + gyr[j]
					gsr[j] = wz*d + gsr[j]
				}
			}
		}
	})
	return nil
}
