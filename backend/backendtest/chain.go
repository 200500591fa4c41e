package backendtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/chainref"
	"github.com/geovb/geovb/tensor"
)

// Conformance of the natural gradient of scalar Gaussian Markov chains (paper 004 eq. 20) against the
// sequential scans of internal/chainref (which models/fisher matches bit for bit), one chain at a time in float64.

func init() {
	register("chain", testChain)
	registerBench("chain", benchChain)
}

// chainInputs returns host g, breve and ring of shape s with s̆ ∈ (−0.95, 0.95) and s̊ ∈ (0.05, 2), the range of a
// fitted chain (|s̆| < 1 keeps the recurrences' products bounded).
func chainInputs(r *rand.Rand, s tensor.Shape) (g, breve, ring *tensor.Tensor) {
	g, breve, ring = tensor.NewHost(s.Batch, s.Rows, s.Cols), tensor.NewHost(s.Batch, s.Rows, s.Cols),
		tensor.NewHost(s.Batch, s.Rows, s.Cols)
	for b := range s.Batch {
		for i := range s.Rows {
			for t := range s.Cols {
				g.Set(b, i, t, r.NormFloat64())
				breve.Set(b, i, t, 1.9*r.Float64()-0.95)
				ring.Set(b, i, t, 0.05+1.95*r.Float64())
			}
		}
	}
	return g, breve, ring
}

// chainWant is the reference: chainref.NatGrad on each row.
func chainWant(g, breve, ring *tensor.Tensor) *tensor.Tensor {
	s := g.Shape()
	out := tensor.NewHost(s.Batch, s.Rows, s.Cols)
	row := func(t *tensor.Tensor, b, i int) []float64 {
		v := make([]float64, s.Cols)
		for j := range v {
			v[j] = t.At(b, i, j)
		}
		return v
	}
	for b := range s.Batch {
		for i := range s.Rows {
			v := row(g, b, i)
			chainref.NatGrad(v, v, row(breve, b, i), row(ring, b, i))
			for j, x := range v {
				out.Set(b, i, j, x)
			}
		}
	}
	return out
}

// chainPadded uploads h into a view of a wider device tensor (two padding columns on each side), so that the
// operation meets operands whose rows are not contiguous.
func chainPadded(t *testing.T, b backend.Backend, h *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	s := h.Shape()
	wide, err := b.Alloc(tensor.Shape{Batch: s.Batch, Rows: s.Rows, Cols: s.Cols + 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Free(wide) })
	if err := b.Fill(wide, math.NaN()); err != nil { // the padding must never be read
		t.Fatal(err)
	}
	v := wide.Slice(0, s.Rows, 2, 2+s.Cols)
	if err := b.Upload(v, h); err != nil {
		t.Fatal(err)
	}
	return v
}

// testChain checks every implementation of chain.natgrad against chainWant on chains of 1 to 1000 steps (1000: ten
// doubling passes), batches up to 7 and up to 5 chains per item, with contiguous and padded operands and with dst
// aliasing g or ring: max-norm error ≤ 1e-12 × (the reference's max-norm + 1). The sequential scans and the doubling
// scans add the same terms in different orders, so only rounding separates them. Then the shape errors.
func testChain(t *testing.T, b backend.Backend) {
	r := rand.New(rand.NewPCG(4, 20))
	for _, s := range []tensor.Shape{{Batch: 1, Rows: 1, Cols: 1}, {Batch: 1, Rows: 1, Cols: 2},
		{Batch: 2, Rows: 3, Cols: 7}, {Batch: 7, Rows: 5, Cols: 64}, {Batch: 3, Rows: 5, Cols: 1000},
		{Batch: 2, Rows: 2, Cols: 33}} {
		hg, hb, hr := chainInputs(r, s)
		want := chainWant(hg, hb, hr)
		scale := 1.0
		for bb := range s.Batch {
			for i := range s.Rows {
				for j := range s.Cols {
					scale = math.Max(scale, 1+math.Abs(want.At(bb, i, j)))
				}
			}
		}
		for _, im := range implsOf(backend.ChainNatGradOp, b, s) {
			for _, layout := range []string{"contiguous", "padded", "dst aliases g", "dst aliases ring"} {
				what := fmt.Sprintf("%s %v %s", im.name, s, layout)
				var g, br, ri, dst *tensor.Tensor
				if layout == "padded" {
					g, br, ri, dst = chainPadded(t, b, hg), chainPadded(t, b, hb), chainPadded(t, b, hr), chainPadded(t, b, hg)
				} else {
					g, br, ri = upload(t, b, hg), upload(t, b, hb), upload(t, b, hr)
					switch layout {
					case "contiguous":
						dst = upload(t, b, hg)
					case "dst aliases g":
						dst = g
					default:
						dst = ri
					}
				}
				if err := im.fn(b, dst, g, br, ri); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				got := download(t, b, dst)
				var worst float64
				for bb := range s.Batch {
					for i := range s.Rows {
						for j := range s.Cols {
							worst = math.Max(worst, math.Abs(got.At(bb, i, j)-want.At(bb, i, j)))
						}
					}
				}
				if !(worst <= 1e-12*scale) {
					t.Errorf("%s: max error %.3g, want ≤ %.3g", what, worst, 1e-12*scale)
				}
			}
		}
	}
	s := tensor.Shape{Batch: 2, Rows: 3, Cols: 5}
	hg, hb, hr := chainInputs(r, s)
	g, br, ri := upload(t, b, hg), upload(t, b, hb), upload(t, b, hr)
	if err := backend.ChainNatGrad(b, g, g, br, ri); err != nil {
		t.Fatalf("ChainNatGrad: %v", err)
	}
	got, want := download(t, b, g), chainWant(hg, hb, hr)
	for i, v := range want.Storage().Host() {
		if e := math.Abs(got.Storage().Host()[i] - v); !(e <= 1e-12*(1+math.Abs(v))) {
			t.Fatalf("ChainNatGrad: element %d is %.17g, want %.17g", i, got.Storage().Host()[i], v)
		}
	}
	g = upload(t, b, hg)
	short := upload(t, b, tensor.NewHost(2, 3, 4))
	wantErr(t, "short ring", backend.ChainNatGrad(b, g, g, br, short), backend.ErrShape, "ring", -1)
	wantErr(t, "short dst", backend.ChainNatGrad(b, short, g, br, ri), backend.ErrShape, "dst", -1)
	wantErr(t, "nil breve", backend.ChainNatGrad(b, g, g, nil, ri), backend.ErrShape, "breve", -1)
	one := upload(t, b, tensor.NewHost(1, 3, 5))
	wantErr(t, "broadcast dst", backend.ChainNatGrad(b, one.Broadcast(2), g, br, ri), backend.ErrShape, "dst", -1)
}

// benchChain times chain.natgrad (the implementation Select picks, then the reference) on the NSSM's shapes (d = 5
// chains of T = 1000 steps; one run and a batch of 30) and reports its rate as GB/s of the least traffic any implementation needs (g, s̆, s̊ read, dst written: 32 bytes
// per element), to be read against the copy floor of benchFloors in the same run.
func benchChain(b *testing.B, be backend.Backend) {
	for _, batch := range []int{1, 30} {
		s := tensor.Shape{Batch: batch, Rows: 5, Cols: 1000}
		hg, hb, hr := chainInputs(rand.New(rand.NewPCG(1, 2)), s)
		g, br, ri := upload(b, be, hg), upload(b, be, hb), upload(b, be, hr)
		dst := mustAlloc(b, be, s)
		selected, _ := backend.ChainNatGradOp.Select(be, s)
		for _, im := range []impl[backend.ChainNatGradFunc]{{"natgrad", selected},
			{"natgrad-reference", backend.ChainNatGradOp.Reference()}} {
			b.Run(fmt.Sprintf("%s/%dx%dx%d", im.name, s.Batch, s.Rows, s.Cols), func(b *testing.B) {
				sec := secondsPerCall(b, be, func() error { return im.fn(be, dst, g, br, ri) })
				b.ReportMetric(32*float64(s.Len())/sec/1e9, "GB/s")
			})
		}
		for _, t := range []*tensor.Tensor{g, br, ri, dst} {
			be.Free(t)
		}
	}
}
