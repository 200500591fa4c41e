package rcgplot

import (
	"context"
	"time"

	"github.com/geovb/geovb/algos/rcg"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/repro/rcgexp"
	"github.com/geovb/geovb/models/mog"
)

// BatchStats are the per-run medians of one batched run (a batch has no per-run times).
type BatchStats struct {
	Runs         int     `json:"runs"`
	Converged    int     `json:"converged"`
	MedianFinalF float64 `json:"median_final_f"`
	MedianIters  float64 `json:"median_iters"`
	MaxIters     int     `json:"max_iters"`
}

// StatsOf computes the medians over the results of a batch (or a slice of one).
func StatsOf(res []rcg.Result) BatchStats {
	var s BatchStats
	var fin, it []float64
	for _, r := range res {
		fin, it = append(fin, r.F), append(it, float64(r.Iters))
		s.MaxIters = max(s.MaxIters, r.Iters)
		if r.Reason == run.Converged {
			s.Converged++
		}
	}
	s.Runs = len(res)
	s.MedianFinalF, s.MedianIters = rcgexp.Median(fin), rcgexp.Median(it)
	return s
}

// RunBatch runs one method of rcgexp.RunMoGBatch ("RCG", "RG", "CG", "GD" or "VBEM", with rcgexp.RunMoG's settings) on
// the given runs (models and starting points) as one mog.Batch on be, and returns the results with the batch's wall
// and process CPU seconds.
func RunBatch(be backend.Backend, method string, ms []*mog.Model, xs [][]float64, tol float64) ([]rcg.Result, float64, float64, error) {
	bt, err := mog.NewBatch(be, ms)
	if err != nil {
		return nil, 0, 0, err
	}
	defer bt.Close()
	c0, t0 := run.CPUTime(), time.Now()
	res, err := rcgexp.RunMoGBatch(context.Background(), bt, xs, method, tol, 0, nil)
	return res, time.Since(t0).Seconds(), (run.CPUTime() - c0).Seconds(), err
}
