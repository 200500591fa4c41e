package sggmcexp

import (
	"testing"

	"github.com/geovb/geovb/algos/sggmc"
	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/internal/datatest"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/models/sam"
)

// BenchmarkSAMIteration: one gSGNHT sample on SAM with the authors' 20News-diff settings (K = 20, S = 50, btL = 10:
// the θ phase and ten Gram-trick gradients and ABOBA steps), reported as iterations/s (the authors' code: ≈ 1/s
// on 2 cores).
func BenchmarkSAMIteration(b *testing.B) {
	be := testbackend.Open(b)
	train, err := datasets.ReadNews20File(datatest.Require(b, "20news-diff", "diff.train.tfidf1.data"))
	if err != nil {
		b.Fatal(err)
	}
	m := sam.MeanDirection(train)
	model, err := sam.New(train, sam.News20Hyper, 20, m, sam.Options{Batch: 50, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	eps := 0.1 / 40.816 // √(γ/D) with γ = 1e-2, D = 1666
	s, err := sggmc.New(be, model, testbackend.Upload(b, be, sam.InitTopics(m, 20, 1)), sggmc.Config{Method: sggmc.GSGNHT, Step: eps, Friction: 1e-2 / eps, L: 10})
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
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "iter/s")
}
