// Command sggmc-sam reproduces paper 001 Fig. 5a (Section 5.3): the spherical admixture model on 20News-diff
// (K = 20, the authors' hyper-parameters) sampled by gSGNHT, SGGMC, GMC-apprMH and GMC-bGibbs and fitted by the
// mean-field baselines VI and StoVI (internal/repro/samvi), printing the test log-perplexity against sampling or
// fitting wall time (evaluation excluded) as JSON lines and drawing the curves as SVG. VI and StoVI are scored with their point
// estimate by the samplers' protocol.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/all"
	"github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/examples/internal/outfile"
	"github.com/geovb/geovb/examples/internal/svgplot"
	"github.com/geovb/geovb/internal/repro/samvi"
	"github.com/geovb/geovb/internal/repro/sggmcexp"
)

func main() {
	cpu.UseForGonum() // the models' gonum calls and the backend's LAPACK on the CPU backend's kernels
	data := flag.String("data", "", "20News-diff folder (default: the shared data folder's 20news-diff)")
	methods := flag.String("methods", strings.Join(append(append([]string(nil), sggmcexp.SAMMethods...), samvi.Methods...), ","), "methods, comma-separated")
	budget := flag.Duration("budget", 300*time.Second, "sampling (fitting) time per method")
	iters := flag.Int("iters", 0, "samples per method, VI sweeps, StoVI steps (0: only the time budget)")
	every := flag.Duration("eval", 20*time.Second, "sampling time between evaluations (VI and StoVI also at iterations 1, 2, 4, …)")
	k := flag.Int("k", 20, "topics")
	seed := flag.Uint64("seed", 1, "seed")
	be := flag.String("backend", "", "backend (cpu, cuda, auto; default $GEOVB_BACKEND or auto)")
	out := flag.String("json", "-", "JSON-lines output (- for stdout)")
	svg := flag.String("svg", "sggmc-sam.svg", "SVG plot output (empty: none)")
	flag.Parse()
	// Every setting is checked before the data are read and before the first method runs for its budget.
	names := strings.Split(*methods, ",")
	for i, m := range names {
		names[i] = strings.TrimSpace(m)
		if !slices.Contains(sggmcexp.SAMMethods, names[i]) && !slices.Contains(samvi.Methods, names[i]) {
			log.Fatalf("-methods: unknown method %q (want %s)", names[i], strings.Join(append(append([]string(nil), sggmcexp.SAMMethods...), samvi.Methods...), ", "))
		}
		if slices.Contains(sggmcexp.SAMMethods, names[i]) {
			if err := (sggmcexp.SAMConfig{Method: names[i], MaxIter: *iters, Budget: *budget, EvalEvery: *every}).Check(); err != nil {
				log.Fatal(err)
			}
		}
	}
	switch {
	case *k < 1:
		log.Fatalf("-k %d: want at least 1 topic", *k)
	case *iters < 0 || *budget < 0 || *every < 0:
		log.Fatalf("-iters %d, -budget %v, -eval %v: want values ≥ 0", *iters, *budget, *every)
	case *iters == 0 && *budget == 0:
		log.Fatal("-iters 0 and -budget 0: the runs would never stop; set one of them")
	}
	for _, p := range []string{*out, *svg} {
		if err := outfile.Check(p); err != nil {
			log.Fatal(err)
		}
	}

	dir := *data
	if dir == "" {
		var err error
		if dir, err = datasets.Path("20news-diff"); err != nil {
			log.Fatal(err)
		}
	}
	train, err := datasets.ReadNews20File(filepath.Join(dir, "diff.train.tfidf1.data"))
	if err != nil {
		log.Fatal(err)
	}
	test, err := datasets.ReadNews20File(filepath.Join(dir, "diff.test.tfidf1.data"))
	if err != nil {
		log.Fatal(err)
	}
	b, err := backend.Open(*be)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	info := b.Info()
	log.Printf("backend %s (%s, %s, %d workers); train %d, test %d documents, V = %d", info.Name, info.Library,
		info.Device, info.Cores, train.Docs(), test.Docs(), train.V)
	w := os.Stdout
	if *out != "-" {
		if w, err = os.Create(*out); err != nil {
			log.Fatal(err)
		}
		defer w.Close()
	}
	enc := json.NewEncoder(w)
	chart := svgplot.Chart{Title: fmt.Sprintf("SAM on 20News-diff, K = %d (%s)", *k, info.Name),
		XLabel: "sampling time (s)", YLabel: "test log-perplexity"}
	for _, m := range names {
		cv := svgplot.Curve{Name: m}
		add := func(sec, lp float64, p any) error {
			cv.X = append(cv.X, sec)
			cv.Y = append(cv.Y, lp)
			return enc.Encode(p)
		}
		var err error
		if slices.Contains(samvi.Methods, m) {
			err = samvi.Run(context.Background(), train, test, samvi.Config{Method: m, K: *k, Seed: *seed,
				MaxIter: *iters, Budget: *budget, EvalEvery: *every}, func(p samvi.Point) error {
				return add(p.Seconds, p.LogPerp, p)
			})
		} else {
			err = sggmcexp.RunSAM(context.Background(), b, train, test, sggmcexp.SAMConfig{Method: m, K: *k,
				Seed: *seed, MaxIter: *iters, Budget: *budget, EvalEvery: *every}, func(p sggmcexp.SAMPoint) error {
				return add(p.Seconds, p.LogPerp, p)
			})
		}
		if err != nil {
			log.Fatal(err)
		}
		chart.Curves = append(chart.Curves, cv)
	}
	if *svg != "" {
		if err := chart.WriteFile(*svg); err != nil {
			log.Fatal(err)
		}
	}
}
