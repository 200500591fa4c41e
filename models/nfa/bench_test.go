package nfa

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/geovb/geovb/rng"
)

// BenchmarkEvalFig10 times F and F with its gradient of the NSSM at Fig. 10's size (NSSM-SYN, T = 1000, p = 21,
// d = 7, H = 30, Gauss–Hermite with 10 nodes) at its initial point. Its reference, measured in the same op, is the
// tanh work of taking every node directly, (T·H + (T−1)·H)·10 calls of math.Tanh on arguments uniform in [−4, 4];
// F/tanh and grad/tanh are the pass times over it (the pass takes its tanh from vmath.Tanh, several times faster,
// so a pass can take less). Run it on one core (-cpu 1), as the reference is single-threaded.
func BenchmarkEvalFig10(b *testing.B) {
	const T, P, Q = 1000, 21, 10
	cfg := Config{Dynamic: true, D: 7, H: 30, Moments: GaussHermite, GHOrder: Q}
	m, err := New(SyntheticNSSM(T, 1), T, P, cfg)
	if err != nil {
		b.Fatal(err)
	}
	x, err := m.Init(1)
	if err != nil {
		b.Fatal(err)
	}
	gr := m.NewGrad()
	args := make([]float64, (T*cfg.H+(T-1)*cfg.H)*Q)
	r := rand.New(rng.NewSource(1, 1))
	for i := range args {
		args[i] = 8*r.Float64() - 4
	}
	var sink float64
	var fT, gT, tT time.Duration
	for b.Loop() {
		t0 := time.Now()
		m.FreeEnergy(x)
		t1 := time.Now()
		m.Gradient(gr, x)
		t2 := time.Now()
		for _, a := range args {
			sink += math.Tanh(a)
		}
		t3 := time.Now()
		fT, gT, tT = fT+t1.Sub(t0), gT+t2.Sub(t1), tT+t3.Sub(t2)
	}
	if math.IsNaN(sink) {
		b.Fatal("tanh gave NaN")
	}
	ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 / float64(b.N) }
	b.ReportMetric(ms(fT), "F-ms")
	b.ReportMetric(ms(gT), "grad-ms")
	b.ReportMetric(ms(tT), "tanh-ref-ms")
	b.ReportMetric(fT.Seconds()/tT.Seconds(), "F/tanh")
	b.ReportMetric(gT.Seconds()/tT.Seconds(), "grad/tanh")
}
