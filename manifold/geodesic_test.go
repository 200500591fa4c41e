package manifold_test

import (
	"errors"
	"math"
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
