// Command sggmc-sam reproduces paper 001 Fig. 5a (notes §7.3): the spherical admixture model on 20News-diff
// (K = 20, the authors' hyper-parameters) sampled by gSGNHT, SGGMC, GMC-apprMH and GMC-bGibbs, printing the test
// log-perplexity against sampling wall time (evaluation excluded) as JSON lines and drawing the curves as SVG.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/geovb/geovb/algos/sggmc"
	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/all"
	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/examples/internal/svgplot"
)

func main() {
	data := flag.String("data", "", "20News-diff folder (default: the shared data folder's 20news-diff)")
	methods := flag.String("methods", strings.Join(sggmc.SAMMethods, ","), "methods, comma-separated")
	budget := flag.Duration("budget", 300*time.Second, "sampling time per method")
	iters := flag.Int("iters", 0, "samples per method (0: only the time budget)")
	every := flag.Duration("eval", 20*time.Second, "sampling time between evaluations")
	k := flag.Int("k", 20, "topics")
	seed := flag.Uint64("seed", 1, "seed")
	be := flag.String("backend", "", "backend (cpu, cuda, auto; default $GEOVB_BACKEND or auto)")
	out := flag.String("json", "-", "JSON-lines output (- for stdout)")
	svg := flag.String("svg", "sggmc-sam.svg", "SVG plot output")
	flag.Parse()

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
	for _, m := range strings.Split(*methods, ",") {
		cv := svgplot.Curve{Name: m}
		err := sggmc.RunSAM(context.Background(), b, train, test, sggmc.SAMConfig{Method: strings.TrimSpace(m), K: *k,
			Seed: *seed, MaxIter: *iters, Budget: *budget, EvalEvery: *every}, func(p sggmc.SAMPoint) error {
			cv.X = append(cv.X, p.Seconds)
			cv.Y = append(cv.Y, p.LogPerp)
			return enc.Encode(p)
		})
		if err != nil {
			log.Fatal(err)
		}
		chart.Curves = append(chart.Curves, cv)
	}
	if err := chart.WriteFile(*svg); err != nil {
		log.Fatal(err)
	}
}
