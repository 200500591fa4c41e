package backend_test

import (
	"fmt"
	"log"
	"math"

	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/all"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// Open a backend, move data to it, run hot operations there and read the results back.
func Example() {
	b, err := backend.Open("cpu") // "auto" picks CUDA when a GPU and its libraries load
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	// 1000 points on Stiefel(6, 2), stepped along tangent directions with the QR retraction qf(X + tV).
	x, _ := b.Alloc(tensor.Shape{Batch: 1000, Rows: 6, Cols: 2})
	v, _ := b.Alloc(x.Shape())
	_ = b.FillNormal(x, rng.Counter{Seed: 1})
	_ = b.FillNormal(v, rng.Counter{Seed: 2})
	if err := backend.QRRetract(b, x, x, nil, 0); err != nil { // orthonormalise the starting points
		log.Fatal(err)
	}
	if err := backend.QRRetract(b, x, x, v, 0.1); err != nil {
		log.Fatal(err)
	}
	q := tensor.NewHost(1000, 6, 2)
	_ = b.Download(q, x)
	var dot float64
	for i := 0; i < 6; i++ {
		dot += q.At(999, i, 0) * q.At(999, i, 1)
	}
	fmt.Printf("columns of the last point orthogonal: %v\n", math.Abs(dot) < 1e-14)

	// A precision W Wᵀ + Ψ with d = 10000, p = 20: Woodbury solve and log-determinant in O(dp²), no d×d matrix.
	w, _ := b.Alloc(tensor.Shape{Batch: 1, Rows: 10000, Cols: 20})
	psi, _ := b.Alloc(tensor.Shape{Batch: 1, Rows: 10000, Cols: 1})
	_ = b.FillNormal(w, rng.Counter{Seed: 3})
	_ = b.Fill(psi, 2)
	lr, err := backend.NewLowRank(b, w, psi)
	if err != nil {
		log.Fatal(err)
	}
	defer lr.Close()
	g, _ := b.Alloc(tensor.Shape{Batch: 1, Rows: 10000, Cols: 1})
	_ = b.Fill(g, 1)
	sol, _ := b.Alloc(g.Shape())
	if err := lr.Solve(sol, g); err != nil {
		log.Fatal(err)
	}
	back, _ := b.Alloc(g.Shape())
	_ = lr.Apply(back, sol) // (W Wᵀ + Ψ) · solution = g
	h := tensor.NewHost(1, 10000, 1)
	_ = b.Download(h, back)
	ld, _ := lr.LogDet()
	fmt.Printf("round trip error below 1e-10: %v, log det > d·log 2: %v\n", math.Abs(h.At(0, 1234, 0)-1) < 1e-10, ld > 10000*math.Ln2)

	// Asking for the impossible is an error, not a panic.
	_, err = b.Alloc(tensor.Shape{Batch: 1, Rows: -1, Cols: 2})
	fmt.Println(err)
	// Output:
	// columns of the last point orthogonal: true
	// round trip error below 1e-10: true, log det > d·log 2: true
	// geovb: alloc: negative dimension in 1×-1×2: shape mismatch
}

// UploadNew puts points built on the host onto the backend, as the functions that take a backend want them.
func ExampleUploadNew() {
	b, err := backend.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	h := tensor.NewHost(2, 1, 3)
	h.Set(0, 0, 0, 1)
	h.Set(1, 0, 2, 1)
	x, err := backend.UploadNew(b, h)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Free(x)
	back := tensor.NewHost(2, 1, 3)
	if err := b.Download(back, x); err != nil {
		log.Fatal(err)
	}
	fmt.Println(x.Shape(), back.At(0, 0, 0), back.At(1, 0, 2), back.At(1, 0, 0))
	_, err = backend.UploadNew(b, nil)
	fmt.Println(err != nil)
	// Output:
	// 2×1×3 1 1 0
	// true
}
