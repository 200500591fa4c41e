package sam

import (
	"testing"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/internal/datatest"
	"github.com/geovb/geovb/tensor"
)

func benchModel(b *testing.B) (*Model, backend.Backend, *tensor.Tensor) {
	train, err := datasets.ReadNews20File(datatest.Require(b, "20news-diff", "diff.train.tfidf1.data"))
	if err != nil {
		b.Fatal(err)
	}
	m := MeanDirection(train)
	md, err := New(train, News20Hyper, 20, m, Options{Batch: 50, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	be, err := backend.Open("cpu")
	if err != nil {
		b.Fatal(err)
	}
	return md, be, InitTopics(m, 20, 1)
}

// BenchmarkGradU: one Gram-trick gradient of eq. (10) for K = 20, V = 5000, S = 50, N = 20.
func BenchmarkGradU(b *testing.B) {
	md, be, x := benchModel(b)
	if err := md.BeginSample(be, x, 0); err != nil {
		b.Fatal(err)
	}
	g := tensor.NewHost(1, 20, 5000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := md.GradU(be, g, x, uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "grad/s")
}

// BenchmarkThetaPhase: the θ chains of one minibatch (50 documents × 60 GMC samples × 10 steps, the authors' setting).
func BenchmarkThetaPhase(b *testing.B) {
	md, be, x := benchModel(b)
	for i := 0; i < b.N; i++ {
		if err := md.BeginSample(be, x, i); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "minibatch/s")
}
