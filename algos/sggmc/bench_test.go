package sggmc

import (
	"testing"

	"github.com/geovb/geovb/internal/testbackend"
)

// BenchmarkSamplerStep: gSGNHT steps of 1e4 chains on S² (vMF target, host gradient), reported as chain-steps/s.
func BenchmarkSamplerStep(b *testing.B) {
	be := testbackend.Open(b)
	tgt, _ := vmfTarget(b, 3, 5, 0)
	const chains = 10000
	s, err := New(be, tgt, randomPoints(b, be, chains, 1, 3, 1), Config{Method: GSGNHT, Step: 0.05, Friction: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Sample(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(chains)*float64(b.N)/b.Elapsed().Seconds(), "chain-steps/s")
}
