package rng

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/geovb/geovb/internal/bigref"
)

// logUnit against ln evaluated in 256-bit arithmetic (internal/bigref): within 1 ulp over random uniforms of every
// binade the generator produces, the ends of (0, 1), powers of two and both sides of the √2 reduction boundary.
// (Measured: 93% of random arguments correctly rounded, the rest 1 ulp off.)
func TestLogUnitAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	us := []float64{toUnit(0, 0), toUnit(math.MaxUint32, math.MaxUint32), 0x1p-53, math.Sqrt2 / 2,
		math.Nextafter(math.Sqrt2/2, 0), math.Nextafter(math.Sqrt2/2, 1), 1 - 0x1p-53, 0.75, 0.9999}
	for e := 1; e <= 54; e++ {
		us = append(us, math.Ldexp(1, -e))
	}
	for i := 0; i < 20000; i++ {
		u := toUnit(r.Uint32(), r.Uint32())
		if i%4 == 0 {
			u = math.Ldexp(u, -r.IntN(53)) // reach the small binades too
		}
		us = append(us, u)
	}
	off := 0
	for _, u := range us {
		got, want := logUnit(u), bigref.Log(u)
		if d := bigref.Ulps(got, want); d > 1 {
			t.Fatalf("logUnit(%v) = %v, want %v: %.2f ulp", u, got, want, d)
		} else if d > 0 {
			off++
		}
	}
	t.Logf("%d of %d not correctly rounded (1 ulp)", off, len(us))
}

// sincos2Pi against sin and cos evaluated in 256-bit arithmetic: within 1 ulp over random uniforms and the
// quadrant boundaries, exact at the quarter turns. (Measured: 96% correctly rounded, the rest 1 ulp off.)
func TestSincos2PiAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	us := []float64{0x1p-53, 1 - 0x1p-53}
	for q := 1; q < 8; q++ {
		us = append(us, float64(q)/8+0x1p-40, float64(q)/8-0x1p-40, math.Nextafter(float64(q)/8, 0))
	}
	for i := 0; i < 20000; i++ {
		us = append(us, toUnit(r.Uint32(), r.Uint32()))
	}
	off := 0
	for _, u := range us {
		gs, gc := sincos2Pi(u)
		ws, wc := bigref.Sincos2Pi(u)
		ds, dc := bigref.Ulps(gs, ws), bigref.Ulps(gc, wc)
		if ds > 1 || dc > 1 {
			t.Fatalf("sincos2Pi(%v) = (%v, %v), want (%v, %v): %.2f, %.2f ulp", u, gs, gc, ws, wc, ds, dc)
		}
		if ds > 0 || dc > 0 {
			off++
		}
	}
	for _, c := range []struct{ u, s, c float64 }{{0, 0, 1}, {0.25, 1, 0}, {0.5, 0, -1}, {0.75, -1, 0}} {
		if s, co := sincos2Pi(c.u); s != c.s || co != c.c {
			t.Fatalf("sincos2Pi(%v) = (%v, %v), want (%v, %v)", c.u, s, co, c.s, c.c)
		}
	}
	t.Logf("%d of %d arguments with a result 1 ulp off", off, len(us))
}

// BoxMuller against the textbook formula through math: within 4e-15 relative (the generator's normals moved by at
// most that when they stopped going through the maths library).
func TestBoxMullerMatchesMath(t *testing.T) {
	c := Counter{Seed: 9, Stream: 2}
	for n := uint64(0); n < 200_000; n++ {
		w := c.Block(n)
		u1, u2 := toUnit(w[0], w[1]), toUnit(w[2], w[3])
		rr := math.Sqrt(-2 * math.Log(u1))
		s, co := math.Sincos(2 * math.Pi * u2)
		e, o := BoxMuller(u1, u2)
		if math.Abs(e-rr*co) > 4e-15*math.Max(1, rr) || math.Abs(o-rr*s) > 4e-15*math.Max(1, rr) {
			t.Fatalf("block %d: BoxMuller = (%v, %v), math = (%v, %v)", n, e, o, rr*co, rr*s)
		}
	}
}

// The vector kernels (where the CPU has one) against the scalar definition, bit for bit: every offset parity, lengths
// around the kernel's 8-value step, streams and seeds with high words set, and block numbers that carry into the
// high counter word.
func TestFillKernelsMatchScalar(t *testing.T) {
	if !useAVX2 {
		t.Skip("no vector kernel on this CPU")
	}
	for _, c := range []Counter{{Seed: 1}, {Seed: 0xfedcba9876543210, Stream: 0x0123456789abcdef, Offset: 7},
		{Seed: 3, Stream: 5, Offset: 2*(1<<32) - 6}} {
		for _, n := range []int{8, 9, 15, 16, 17, 64, 1001} {
			got, gotU := make([]float64, n), make([]float64, n)
			c.FillNormal(got)
			c.FillUniform(gotU)
			for i := range got {
				if want := c.Normal(uint64(i)); got[i] != want {
					t.Fatalf("%+v n=%d: normal %d = %v, scalar %v", c, n, i, got[i], want)
				}
				if want := c.Uniform(uint64(i)); gotU[i] != want {
					t.Fatalf("%+v n=%d: uniform %d = %v, scalar %v", c, n, i, gotU[i], want)
				}
			}
		}
	}
	// Many draws, so that every quadrant and binade of the transform is reached.
	c := Counter{Seed: 11, Stream: 1}
	got := make([]float64, 1<<20)
	c.FillNormal(got)
	for i := 0; i < len(got); i += 2 {
		w := c.Block(uint64(i / 2))
		e, o := BoxMuller(toUnit(w[0], w[1]), toUnit(w[2], w[3]))
		if got[i] != e || got[i+1] != o {
			t.Fatalf("pair %d = (%v, %v), scalar (%v, %v)", i/2, got[i], got[i+1], e, o)
		}
	}
}
