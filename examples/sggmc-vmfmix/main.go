// Command sggmc-vmfmix reproduces paper 001 Fig. 4 (Section 5.2): the posterior of the two-vMF mixture on S¹×S¹
// sampled by SGGMC with minibatches of 10 and the empirical-Fisher V̂, by SGGMC with V̂ = 0 and by full-gradient
// GMC. It prints, per method, the total-variation distance of the v₁ and v₂ angle marginals (2° bins) from the
// 720² grid posterior against wall time as JSON lines and draws TV(v₁) as SVG.
package main

import (
	"encoding/json"
	"flag"
	"log"
	"math"
	"os"
	"time"

	"github.com/geovb/geovb/algos/sggmc"
	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/all"
	"github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/examples/internal/outfile"
	"github.com/geovb/geovb/examples/internal/svgplot"
	"github.com/geovb/geovb/internal/repro/sggmcexp"
	"github.com/geovb/geovb/tensor"
)

type point struct {
	Method  string  `json:"method"`
	Samples int     `json:"samples"`
	Seconds float64 `json:"seconds"`
	TV1     float64 `json:"tv_v1"`
	TV2     float64 `json:"tv_v2"`
}

const grid = 720

func main() {
	cpu.UseForGonum() // the models' gonum calls and the backend's LAPACK on the CPU backend's kernels
	seed := flag.Uint64("seed", 1, "seed")
	iters := flag.Int("iters", 200, "samples per chain")
	chains := flag.Int("chains", 500, "chains")
	be := flag.String("backend", "", "backend (cpu, cuda, auto)")
	out := flag.String("json", "-", "JSON-lines output (- for stdout)")
	svg := flag.String("svg", "sggmc-vmfmix.svg", "SVG plot output (empty: none)")
	flag.Parse()
	if *iters < 1 || *chains < 1 {
		log.Fatalf("-iters %d, -chains %d: want at least 1 sample and 1 chain", *iters, *chains)
	}
	for _, p := range []string{*out, *svg} {
		if err := outfile.Check(p); err != nil {
			log.Fatal(err)
		}
	}
	b, err := backend.Open(*be)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	log.Printf("backend %s", b.Info().Name)
	tgt, err := sggmcexp.SyntheticTwoVMF(2016)
	if err != nil {
		log.Fatal(err)
	}
	tgt.Batch, tgt.Seed = 10, *seed
	g := tgt.Grid(grid)
	w := os.Stdout
	if *out != "-" {
		if w, err = os.Create(*out); err != nil {
			log.Fatal(err)
		}
		defer w.Close()
	}
	enc := json.NewEncoder(w)
	x0 := tensor.NewHost(*chains, 2, 2)
	for c := 0; c < *chains; c++ {
		a1, a2 := 0.3*(float64(c%17)/16-0.5), 0.6*(float64(c%13)/12-0.5)
		x0.Set(c, 0, 0, math.Cos(a1))
		x0.Set(c, 0, 1, math.Sin(a1))
		x0.Set(c, 1, 0, math.Cos(a2))
		x0.Set(c, 1, 1, math.Sin(a2))
	}
	if x0, err = backend.UploadNew(b, x0); err != nil { // the samplers take their starting points on b
		log.Fatal(err)
	}
	chart := svgplot.Chart{Title: "two-vMF mixture: TV(v₁ marginal, grid posterior)", XLabel: "wall time (s)", YLabel: "TV"}
	type sampler interface {
		Sample() error
		X() *tensor.Tensor
	}
	for _, meth := range []string{"SGGMC-Fisher", "SGGMC-VHat0", "GMC"} {
		var s sampler
		tgt.NoFisher = meth == "SGGMC-VHat0"
		switch meth {
		case "GMC":
			gm, err := sggmc.NewGMC(b, tgt, x0, 0.01, 10, *seed, 2)
			if err != nil {
				log.Fatal(err)
			}
			defer gm.Close()
			tgt.Batch = 0
			s = gm
		default:
			sm, err := sggmc.New(b, tgt, x0, sggmc.Config{Step: 4e-3, Friction: 20, L: 25, Seed: *seed})
			if err != nil {
				log.Fatal(err)
			}
			defer sm.Close()
			tgt.Batch = 10
			s = sm
		}
		h1, h2 := make([]float64, grid), make([]float64, grid)
		host := tensor.NewHost(*chains, 2, 2)
		cv := svgplot.Curve{Name: meth}
		start := time.Now()
		n := 0.0
		for it := 1; it <= *iters; it++ {
			if err := s.Sample(); err != nil {
				log.Fatal(err)
			}
			if err := b.Download(host, s.X()); err != nil {
				log.Fatal(err)
			}
			for c := 0; c < *chains; c++ {
				h1[sggmcexp.GridCell(math.Atan2(host.At(c, 0, 1), host.At(c, 0, 0)), grid)]++
				h2[sggmcexp.GridCell(math.Atan2(host.At(c, 1, 1), host.At(c, 1, 0)), grid)]++
				n++
			}
			if it%10 == 0 || it == *iters {
				p1, p2 := make([]float64, grid), make([]float64, grid)
				for i := range h1 {
					p1[i], p2[i] = h1[i]/n, h2[i]/n
				}
				p := point{meth, it * *chains, time.Since(start).Seconds(), sggmcexp.TV(p1, g.M1, 4), sggmcexp.TV(p2, g.M2, 4)}
				if err := enc.Encode(p); err != nil {
					log.Fatal(err)
				}
				cv.X, cv.Y = append(cv.X, p.Seconds), append(cv.Y, p.TV1)
			}
		}
		chart.Curves = append(chart.Curves, cv)
	}
	if *svg != "" {
		if err := chart.WriteFile(*svg); err != nil {
			log.Fatal(err)
		}
	}
}
