package model_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/tensor"
)

// gaussian is log N(x; m, A⁻¹) up to a constant with A = diag(a) + u uᵀ, in closed form: −½(x−m)ᵀA(x−m), gradient
// −A(x − m). Points with x[0] > limit are outside the support.
type gaussian struct {
	m, a, u []float64
	limit   float64
	wrong   int // a coordinate whose gradient is off by 1e-3 (−1: none)
}

func (g *gaussian) Dim() int { return len(g.m) }

func (g *gaussian) LogDensity(grad, x []float64) (float64, error) {
	if x[0] > g.limit {
		return math.NaN(), fmt.Errorf("x[0] = %v > %v: %w", x[0], g.limit, model.ErrSupport)
	}
	ud := 0.0
	for i := range x {
		ud += g.u[i] * (x[i] - g.m[i])
	}
	q := ud * ud
	for i := range x {
		r := x[i] - g.m[i]
		q += g.a[i] * r * r
		grad[i] = -(g.a[i]*r + g.u[i]*ud)
	}
	if g.wrong >= 0 {
		grad[g.wrong] += 1e-3
	}
	return -q / 2, nil
}

func newGaussian(d int) *gaussian {
	g := &gaussian{m: make([]float64, d), a: make([]float64, d), u: make([]float64, d), limit: math.Inf(1), wrong: -1}
	for i := range g.m {
		g.m[i] = 0.3 * float64(i%3)
		g.a[i] = 1 + 0.5*float64(i)
		g.u[i] = 0.2 * float64(i+1)
	}
	return g
}

func point(d int, k, j int) []float64 {
	x := make([]float64, d)
	for i := range x {
		x[i] = math.Sin(float64(1+i+7*k+13*j)) * 1.5
	}
	return x
}

// TestBatchMatchesHost evaluates a host model through Batch on B = 3 fits × S = 4 draws and compares every value and
// gradient bit for bit with direct host calls; then the same through Host(b, Batch(m)).
func TestBatchMatchesHost(t *testing.T) {
	b := testbackend.Open(t)
	const d, B, S = 5, 3, 4
	g := newGaussian(d)
	bm := model.Batch(g)
	if bm.Dim() != d {
		t.Fatalf("Dim %d, want %d", bm.Dim(), d)
	}
	th := tensor.NewHost(B, d, S)
	for k := 0; k < B; k++ {
		for j := 0; j < S; j++ {
			for i, v := range point(d, k, j) {
				th.Set(k, i, j, v)
			}
		}
	}
	dth, dlp, dgr := alloc(t, b, th.Shape()), alloc(t, b, tensor.Shape{Batch: B, Rows: 1, Cols: S}), alloc(t, b, th.Shape())
	if err := b.Upload(dth, th); err != nil {
		t.Fatal(err)
	}
	for _, withGrad := range []bool{true, false} {
		var gr *tensor.Tensor
		if withGrad {
			gr = dgr
		}
		if err := bm.LogDensityBatch(b, dlp, gr, dth); err != nil {
			t.Fatal(err)
		}
		lp, hg := download(t, b, dlp), download(t, b, dgr)
		want := make([]float64, d)
		for k := 0; k < B; k++ {
			for j := 0; j < S; j++ {
				v, _ := g.LogDensity(want, point(d, k, j))
				if lp.At(k, 0, j) != v {
					t.Errorf("grad %v: lp[%d,%d] = %v, want %v", withGrad, k, j, lp.At(k, 0, j), v)
				}
				for i := 0; i < d && withGrad; i++ {
					if hg.At(k, i, j) != want[i] {
						t.Errorf("grad[%d,%d,%d] = %v, want %v", k, i, j, hg.At(k, i, j), want[i])
					}
				}
			}
		}
	}
	h := model.Host(b, bm)
	defer h.Close()
	got, want := make([]float64, d), make([]float64, d)
	x := point(d, 5, 6)
	v, err := h.LogDensity(got, x)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := g.LogDensity(want, x)
	if v != w {
		t.Errorf("Host: log p %v, want %v", v, w)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("Host: grad[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}

// TestBatchErrors: shape mismatches are ErrShape before any evaluation; a point outside the support names the fit
// and the draw and wraps ErrSupport.
func TestBatchErrors(t *testing.T) {
	b := testbackend.Open(t)
	g := newGaussian(3)
	g.limit = 1
	bm := model.Batch(g)
	th := alloc(t, b, tensor.Shape{Batch: 2, Rows: 3, Cols: 2})
	lp := alloc(t, b, tensor.Shape{Batch: 2, Rows: 1, Cols: 2})
	for name, c := range map[string]struct{ lp, gr, th *tensor.Tensor }{
		"theta rows": {lp, nil, alloc(t, b, tensor.Shape{Batch: 2, Rows: 4, Cols: 2})},
		"lp":         {alloc(t, b, tensor.Shape{Batch: 2, Rows: 1, Cols: 3}), nil, th},
		"grad":       {lp, alloc(t, b, tensor.Shape{Batch: 2, Rows: 3, Cols: 1}), th},
	} {
		if err := bm.LogDensityBatch(b, c.lp, c.gr, c.th); !errors.Is(err, backend.ErrShape) {
			t.Errorf("%s: %v, want ErrShape", name, err)
		}
	}
	h := tensor.NewHost(2, 3, 2)
	h.Set(1, 0, 1, 2) // fit 1, draw 1 has x[0] = 2 > 1
	if err := b.Upload(th, h); err != nil {
		t.Fatal(err)
	}
	err := bm.LogDensityBatch(b, lp, nil, th)
	if !errors.Is(err, model.ErrSupport) {
		t.Fatalf("outside the support: %v, want ErrSupport", err)
	}
	if want := "fit 1, draw 1"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %q", err, want)
	}
}

// TestCheckGradient: the exact gradient passes at 1e-7; a gradient off by 1e-3 in one coordinate fails, naming it.
func TestCheckGradient(t *testing.T) {
	g := newGaussian(6)
	x := point(6, 1, 2)
	c, err := model.CompareGradient(g, x, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c.Err > 1e-7 {
		t.Errorf("exact gradient: error %g at %d, want ≤ 1e-7", c.Err, c.Coord)
	}
	if err := model.CheckGradient(g, x, 0, 1e-7); err != nil {
		t.Error(err)
	}
	g.wrong = 4
	err = model.CheckGradient(g, x, 0, 1e-7)
	if !errors.Is(err, model.ErrGradient) || !strings.Contains(err.Error(), "x[4]") {
		t.Errorf("wrong gradient: %v, want ErrGradient naming x[4]", err)
	}
	if _, err := model.CompareGradient(g, x[:2], 0); err == nil {
		t.Error("short x: no error")
	}
	g.limit = -10
	if err := model.CheckGradient(g, x, 0, 1e-7); !errors.Is(err, model.ErrSupport) {
		t.Errorf("outside the support: %v, want ErrSupport", err)
	}
}

func alloc(t *testing.T, b backend.Backend, s tensor.Shape) *tensor.Tensor {
	t.Helper()
	x, err := b.Alloc(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Free(x) })
	return x
}

func download(t *testing.T, b backend.Backend, x *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	h := tensor.NewHost(x.Batch(), x.Rows(), x.Cols())
	if err := b.Download(h, x); err != nil {
		t.Fatal(err)
	}
	return h
}
