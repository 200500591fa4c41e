// Package mgvbcli holds what the paper 000 examples (mgvb-german, mgvb-garch, mgvb-nnvb) share: opening the
// backend, finding the data file, and writing lower-bound traces as CSV and SVG.
package mgvbcli

import (
	"encoding/csv"
	"fmt"
	"io"
	"log"
	"strconv"

	"github.com/geovb/geovb/algos/mgvb"
	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/all" // every compiled-in backend for backend.Open
	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/examples/internal/outfile"
	"github.com/geovb/geovb/examples/internal/svgplot"
)

// Open opens the named backend (empty reads GEOVB_BACKEND) and logs which it is; it exits on failure.
func Open(name string) backend.Backend {
	b, err := backend.Open(name)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("backend %s", b.Info().Name)
	return b
}

// DrawsUsage is the help text of the -draws flag.
const DrawsUsage = "Monte Carlo draws: prng (Philox normals) or rqmc (scrambled Sobol', as the authors' code)"

// Draws parses the -draws flag.
func Draws(name string) (mgvb.Draws, error) {
	switch name {
	case "prng":
		return mgvb.PseudoRandom, nil
	case "rqmc":
		return mgvb.RQMC, nil
	}
	return 0, fmt.Errorf("-draws %q: want prng or rqmc", name)
}

// DataPath returns path, or when it is empty the shared data file elem (datasets.Path); it exits on failure.
func DataPath(path string, elem ...string) string {
	if path != "" {
		return path
	}
	p, err := datasets.Path(elem...)
	if err != nil {
		log.Fatal(err)
	}
	return p
}

// Series is the lower-bound trace of one run (iteration i+1 at index i).
type Series struct {
	Name         string
	LB, Smoothed []float64
}

// CheckOutputs reports, before a run, an output path whose folder is missing or not writable (empty paths are
// skipped), so that a long run does not end without its trace or figure.
func CheckOutputs(paths ...string) error { return outfile.Check(paths...) }

// WriteTrace writes the series as CSV rows (iter, method, lb, smoothed); an empty path writes nothing. The file is
// written whole or not at all (outfile.Write).
func WriteTrace(path string, series []Series) error {
	if path == "" {
		return nil
	}
	return outfile.Write(path, func(f io.Writer) error {
		w := csv.NewWriter(f)
		w.Write([]string{"iter", "method", "lb", "smoothed"})
		for _, s := range series {
			for i := range s.LB {
				w.Write([]string{strconv.Itoa(i + 1), s.Name, strconv.FormatFloat(s.LB[i], 'g', 10, 64), strconv.FormatFloat(s.Smoothed[i], 'g', 10, 64)})
			}
		}
		w.Flush()
		return w.Error()
	})
}

// Plot draws the smoothed traces from iteration skip+1 on (the first window is partial) as an SVG line chart; an
// empty path writes nothing.
func Plot(path, title string, series []Series, skip int) error {
	if path == "" {
		return nil
	}
	c := svgplot.Chart{Title: title, XLabel: "iteration", YLabel: "smoothed lower bound"}
	for _, s := range series {
		cv := svgplot.Curve{Name: s.Name}
		for i := skip; i < len(s.Smoothed); i++ {
			cv.X, cv.Y = append(cv.X, float64(i+1)), append(cv.Y, s.Smoothed[i])
		}
		c.Curves = append(c.Curves, cv)
	}
	return c.WriteFile(path)
}
