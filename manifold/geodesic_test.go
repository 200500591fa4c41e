package manifold_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/manifold"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// TestGeodesicFlow checks Flow against closed forms on the host: on Euclidean space x + hv with v unchanged; on a
// product of spheres the great circle x cos(‖v‖h) + v/‖v‖ sin(‖v‖h), v ← −x‖v‖ sin(‖v‖h) + v cos(‖v‖h) row by
// row (paper 001 eq. (7)), to 1e-13. Normalize is the identity on Euclidean points and gives unit rows on spheres.
func TestGeodesicFlow(t *testing.T) {
	b := newBackend(t)
	const h = 0.37
	for _, g := range []manifold.Geodesic{must(manifold.NewEuclidean(3, 4)), must(manifold.NewSphere(3, 4))} {
		x, v := alloc(t, b, g.PointShape(2)), alloc(t, b, g.PointShape(2))
		if err := g.RandomPoint(b, x, rng.Counter{Seed: 3}); err != nil {
			t.Fatal(err)
		}
		if err := g.RandomTangent(b, v, x, rng.Counter{Seed: 4}); err != nil {
			t.Fatal(err)
		}
		x0, v0 := down(t, b, x), down(t, b, v)
		if err := g.Flow(b, x, v, h); err != nil {
			t.Fatal(err)
		}
		x1, v1 := down(t, b, x), down(t, b, v)
		_, sphere := g.(*manifold.Sphere)
		for k := 0; k < 2; k++ {
			for i := 0; i < 3; i++ {
				nv := 0.0
				for j := 0; j < 4; j++ {
					nv += v0.At(k, i, j) * v0.At(k, i, j)
				}
				nv = math.Sqrt(nv)
				for j := 0; j < 4; j++ {
					xw, vw := x0.At(k, i, j)+h*v0.At(k, i, j), v0.At(k, i, j)
					if sphere {
						c, s := math.Cos(nv*h), math.Sin(nv*h)
						xw = x0.At(k, i, j)*c + v0.At(k, i, j)/nv*s
						vw = -x0.At(k, i, j)*nv*s + v0.At(k, i, j)*c
					}
					if math.Abs(x1.At(k, i, j)-xw) > 1e-13 || math.Abs(v1.At(k, i, j)-vw) > 1e-13 {
						t.Fatalf("%s: (%d,%d,%d): x %v v %v, want %v %v", g.Name(), k, i, j, x1.At(k, i, j), v1.At(k, i, j), xw, vw)
					}
				}
			}
		}
		if err := g.Normalize(b, x, v); err != nil {
			t.Fatal(err)
		}
		if err := g.CheckPoint(down(t, b, x), 1e-14); err != nil {
			t.Errorf("%s: after Normalize: %v", g.Name(), err)
		}
	}
}

// TestGeodesicCheckPoint: a row off the sphere, a non-finite entry and a wrong shape are refused.
func TestGeodesicCheckPoint(t *testing.T) {
	s, e := must(manifold.NewSphere(2, 3)), must(manifold.NewEuclidean(2, 3))
	x := tensor.NewHost(2, 2, 3)
	for k := 0; k < 2; k++ {
		x.Set(k, 0, 0, 1)
		x.Set(k, 1, 2, 1)
	}
	if err := s.CheckPoint(x, 1e-8); err != nil {
		t.Fatalf("unit rows refused: %v", err)
	}
	x.Set(1, 1, 2, 1.001)
	if err := s.CheckPoint(x, 1e-8); !errors.Is(err, backend.ErrDomain) {
		t.Errorf("row off the sphere: %v, want ErrDomain", err)
	}
	if err := e.CheckPoint(x, 1e-8); err != nil {
		t.Errorf("Euclidean refuses a finite point: %v", err)
	}
	x.Set(0, 1, 1, math.NaN())
	if err := e.CheckPoint(x, 1e-8); !errors.Is(err, backend.ErrDomain) {
		t.Errorf("NaN: %v, want ErrDomain", err)
	}
	if err := e.CheckPoint(tensor.NewHost(1, 3, 2), 1e-8); !errors.Is(err, backend.ErrShape) {
		t.Errorf("wrong shape: %v, want ErrShape", err)
	}
}

// TestWorkspaceReuse: each operation of each manifold allocates its scratch on its first call only. Per
// operation, the backend's memory in use after a second call equals that after the first (nothing allocated per
// call is kept), the operations that need scratch (Inner everywhere, RiemannianGrad, Retract and RandomPoint on
// SPD, the projection on Stiefel, the exponential retraction on spheres) hold it after the first call (an
// implementation that allocated and freed per call would not), and Close gives it all back.
func TestWorkspaceReuse(t *testing.T) {
	b := newBackend(t)
	for _, f := range fixtures() {
		m := f.m
		x, u, v, dst := alloc(t, b, m.PointShape(2)), alloc(t, b, m.PointShape(2)), alloc(t, b, m.PointShape(2)), alloc(t, b, m.PointShape(2))
		in := alloc(t, b, tensor.Shape{Batch: 2, Rows: 1, Cols: 1})
		ok(t, m.RandomPoint(b, x, rng.Counter{Seed: 1}))
		ok(t, m.RandomTangent(b, u, x, rng.Counter{Seed: 2}))
		ok(t, m.RandomTangent(b, v, x, rng.Counter{Seed: 3}))
		m.Close()
		base := b.MemInUse()
		kind := strings.SplitN(f.name, "-", 2)[0]
		for _, op := range []struct {
			name    string
			scratch bool
			call    func() error
		}{
			{"project", kind == "stiefel", func() error { return m.Project(b, dst, x, u) }},
			{"rgrad", kind == "stiefel" || kind == "spd", func() error { return m.RiemannianGrad(b, dst, x, u) }},
			{"retract", kind == "spd" || f.name == "sphere-exp" || f.name == "sphere-S1", func() error { return m.Retract(b, dst, x, u, 0.1) }},
			{"transport", kind == "stiefel", func() error { return m.Transport(b, dst, x, x, v) }},
			{"inner", true, func() error { return m.Inner(b, in, x, u, v) }},
			{"random", kind == "spd", func() error { return m.RandomPoint(b, dst, rng.Counter{Seed: 4}) }},
		} {
			m.Close() // each operation from no scratch (Stiefel's share the projection's)
			before := b.MemInUse()
			ok(t, op.call())
			first := b.MemInUse()
			ok(t, op.call())
			if second := b.MemInUse(); second != first {
				t.Errorf("%s %s: memory in use %d after the first call, %d after the second", f.name, op.name, first, second)
			}
			if op.scratch && first == before {
				t.Errorf("%s %s: no scratch kept after the first call", f.name, op.name)
			}
		}
		m.Close()
		if after := b.MemInUse(); after != base {
			t.Errorf("%s: memory in use %d after Close, %d before the calls", f.name, after, base)
		}
	}
}
