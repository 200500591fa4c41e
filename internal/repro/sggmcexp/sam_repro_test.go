package sggmcexp

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/internal/datatest"
	"github.com/geovb/geovb/internal/repro"
	"github.com/geovb/geovb/internal/testbackend"
)

func news20(t *testing.T) (train, test *datasets.Corpus) {
	var err error
	if train, err = datasets.ReadNews20File(datatest.Require(t, "20news-diff", "diff.train.tfidf1.data")); err != nil {
		t.Fatal(err)
	}
	if test, err = datasets.ReadNews20File(datatest.Require(t, "20news-diff", "diff.test.tfidf1.data")); err != nil {
		t.Fatal(err)
	}
	return train, test
}

// samRepro runs one SG method for 1000 samples with the authors' 20News-diff settings (K = 20, S = 50, btL = 10,
// γ = α_a = 1e-2) and checks that the log-perplexity does not rise between evaluations and that θ-GMC accepts
// > 95 %.
func samRepro(t *testing.T, meth string) SAMPoint {
	b := testbackend.Open(t)
	train, test := news20(t)
	var pts []SAMPoint
	err := RunSAM(context.Background(), b, train, test, SAMConfig{Method: meth, Seed: 2, MaxIter: 1000,
		EvalEvery: 20 * time.Second}, func(p SAMPoint) error { pts = append(pts, p); return nil })
	if err != nil {
		t.Fatal(err)
	}
	last := pts[len(pts)-1]
	t.Logf("%s: %d samples in %.1f s sampling (%.1f it/s) + %.1f s evaluation: log-perp %.1f, ξ %.4g, ‖v‖²/m %.3g, θ acceptance %.4f",
		meth, last.Iter, last.Seconds, float64(last.Iter)/last.Seconds, last.EvalSeconds, last.LogPerp, last.Xi,
		last.Kinetic, last.ThetaAccept)
	for i := 1; i < len(pts); i++ {
		if pts[i].LogPerp > pts[i-1].LogPerp+1 {
			t.Errorf("%s: log-perp rose from %.1f to %.1f between evaluations", meth, pts[i-1].LogPerp, pts[i].LogPerp)
		}
	}
	if !(last.ThetaAccept > 0.95) {
		t.Errorf("%s: θ-GMC acceptance %.4f", meth, last.ThetaAccept)
	}
	return last
}

// TestReproSAMgSGNHT: gSGNHT below the prototype band 2900 after 1000 samples (prototype
// 2764/2811) with ξ in the 10³ range.
func TestReproSAMgSGNHT(t *testing.T) {
	repro.Require(t)
	g := samRepro(t, SAMgSGNHT)
	if !(g.LogPerp < 2900) {
		t.Errorf("gSGNHT log-perp %.1f after 1000 samples, want < 2900", g.LogPerp)
	}
	if !(g.Xi > 500 && g.Xi < 1e4) || math.IsNaN(g.Xi) {
		t.Errorf("gSGNHT ξ = %.4g, want the 10³ range", g.Xi)
	}
}

// TestReproSAMSGGMC: SGGMC below 4600 after 1000 samples (prototype 4385) but above gSGNHT's band 2900, so the
// two tests together check the ordering gSGNHT < SGGMC at equal samples; SGGMC runs hot (‖v‖²/m ≫ 1 at the paper's settings).
func TestReproSAMSGGMC(t *testing.T) {
	repro.Require(t)
	s := samRepro(t, SAMSGGMC)
	if !(s.LogPerp < 4600 && s.LogPerp > 2900) {
		t.Errorf("SGGMC log-perp %.1f after 1000 samples, want in (2900, 4600)", s.LogPerp)
	}
	if !(s.Kinetic > 100) {
		t.Errorf("SGGMC ‖v‖²/m = %.3g: expected the hot regime of notes P18", s.Kinetic)
	}
}
