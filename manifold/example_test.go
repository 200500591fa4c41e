package manifold_test

import (
	"fmt"
	"math"

	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/cpu" // registers the "cpu" backend
	"github.com/geovb/geovb/manifold"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// Example moves a batch of two points of S² × S² along their geodesics and transports the velocity to the new
// point, the two steps of a Riemannian optimiser or of the A step of SGGMC.
func Example() {
	b, err := backend.Open("cpu")
	if err != nil {
		panic(err)
	}
	m, err := manifold.NewSphere(2, 3) // two spheres S² ⊂ R³ per point; exponential retraction
	if err != nil {
		panic(err)
	}
	s := m.PointShape(2) // batch of 2 points: 2×2×3
	x, _ := b.Alloc(s)
	v, _ := b.Alloc(s)
	y, _ := b.Alloc(s)
	w, _ := b.Alloc(s)
	check := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	check(m.RandomPoint(b, x, rng.Counter{Seed: 1}))
	check(m.RandomTangent(b, v, x, rng.Counter{Seed: 2}))
	check(m.Retract(b, y, x, v, 0.5)) // y = Exp_x(0.5 v)
	check(m.Transport(b, w, x, y, v)) // w ∈ T_y

	// every row of y is a unit vector and the matching row of w is orthogonal to it (read on the host: a GPU
	// backend's tensors are not host memory)
	yh, wh := tensor.NewHost(s.Batch, s.Rows, s.Cols), tensor.NewHost(s.Batch, s.Rows, s.Cols)
	check(b.Download(yh, y))
	check(b.Download(wh, w))
	worst := 0.0
	for p := 0; p < 2; p++ {
		for k := 0; k < 2; k++ {
			var n2, d float64
			for j := 0; j < 3; j++ {
				n2 += yh.At(p, k, j) * yh.At(p, k, j)
				d += yh.At(p, k, j) * wh.At(p, k, j)
			}
			worst = math.Max(worst, math.Max(math.Abs(math.Sqrt(n2)-1), math.Abs(d)))
		}
	}
	fmt.Println(m.Name(), "dim", m.Dim(), "retraction", m.RetractionMethod())
	fmt.Println("on the manifold and tangent:", worst < 1e-14)
	// Output:
	// Sphere(2 × S^2) dim 4 retraction exponential
	// on the manifold and tangent: true
}
