package sggmcexp

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/internal/testbackend"
)

// tinyCorpus returns documents of unit weight vectors over V words, each on the words of its ids.
func tinyCorpus(V int, docs ...[]int32) *datasets.Corpus {
	c := &datasets.Corpus{V: V, Ptr: []int{0}}
	for _, ids := range docs {
		for _, id := range ids {
			c.Idx = append(c.Idx, id)
			c.Val = append(c.Val, 1/math.Sqrt(float64(len(ids))))
		}
		c.Ptr = append(c.Ptr, len(c.Idx))
		c.Label = append(c.Label, 0)
	}
	return c
}

// RunSAM refuses before sampling: corpora of different vocabularies, a word id out of range, negative limits
// (which would mean no limit) and a GMC cap within its burn-in (no evaluation at all); a GMC run whose budget ends
// within the burn-in is an error, not silence.
func TestRunSAMBadInput(t *testing.T) {
	b := testbackend.Open(t)
	train := tinyCorpus(5, []int32{0, 3}, []int32{2}, []int32{1, 4})
	test := tinyCorpus(5, []int32{0, 3}, []int32{2})
	wide := tinyCorpus(7, []int32{0, 6}, []int32{2})
	bad := tinyCorpus(5, []int32{0, 3}, []int32{2})
	bad.Idx[1] = 9
	report := func(SAMPoint) error { return nil }
	for _, c := range []struct {
		name        string
		train, test *datasets.Corpus
		cfg         SAMConfig
		want        error
	}{
		{"vocabularies", train, wide, SAMConfig{Method: SAMSGGMC, MaxIter: 5}, backend.ErrShape},
		{"word id", bad, test, SAMConfig{Method: SAMSGGMC, MaxIter: 5}, backend.ErrShape},
		{"MaxIter < 0", train, test, SAMConfig{Method: SAMSGGMC, MaxIter: -1}, backend.ErrDomain},
		{"Budget < 0", train, test, SAMConfig{Method: SAMSGGMC, Budget: -time.Second}, backend.ErrDomain},
		{"GMC burn-in", train, test, SAMConfig{Method: SAMGMCApprMH, MaxIter: 10}, backend.ErrDomain},
		{"GMC budget", train, test, SAMConfig{Method: SAMGMCbGibbs, Budget: time.Nanosecond}, backend.ErrDomain},
	} {
		c.cfg.K, c.cfg.Batch, c.cfg.NTheta = 2, 2, 5
		if err := RunSAM(context.Background(), b, c.train, c.test, c.cfg, report); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// TestSAMConfigCheck: the data-free settings checks a program can run before any method: the GMC burn-in bound is
// 30 samples (30 fails, 31 passes), the SG methods have none, negative limits and unknown methods fail.
func TestSAMConfigCheck(t *testing.T) {
	for _, c := range []struct {
		cfg SAMConfig
		ok  bool
	}{
		{SAMConfig{Method: SAMGMCApprMH, MaxIter: 30}, false},
		{SAMConfig{Method: SAMGMCbGibbs, MaxIter: 31}, true},
		{SAMConfig{Method: SAMGMCbGibbs}, true},
		{SAMConfig{Method: SAMgSGNHT, MaxIter: 5}, true},
		{SAMConfig{Method: SAMSGGMC, Budget: -time.Second}, false},
		{SAMConfig{Method: SAMSGGMC, EvalEvery: -1}, false},
		{SAMConfig{Method: "EP"}, false},
	} {
		if err := c.cfg.Check(); (err == nil) != c.ok {
			t.Errorf("%+v: error %v, want ok = %v", c.cfg, err, c.ok)
		}
	}
}
