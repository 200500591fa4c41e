// Command sggmc-circle reproduces paper 001 Fig. 3 (Section 5.1): the toy target ∝ e^{5μ₁ᵀx} + 2e^{5μ₂ᵀx} on the
// circle (μ at ±π/3), sampled by SGGMC with the exact gradient, with gradient noise 𝒩(0, 1000 I) corrected by
// V̂ = 1000, and with the same noise uncorrected (V̂ = 0, which samples the tempered target). It prints the error
// ‖Ê[x] − E[x]‖ of the running mean against wall time per method as JSON lines and draws it as SVG.
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
	"github.com/geovb/geovb/models/vmf"
	"github.com/geovb/geovb/tensor"
)

type point struct {
	Method  string  `json:"method"`
	Samples int     `json:"samples"`
	Seconds float64 `json:"seconds"`
	Ex      float64 `json:"ex"`
	Ey      float64 `json:"ey"`
	Err     float64 `json:"error"`
}

func main() {
	cpu.UseForGonum() // the models' gonum calls and the backend's LAPACK on the CPU backend's kernels
	seed := flag.Uint64("seed", 1, "seed")
	iters := flag.Int("iters", 2000, "samples per chain (L = 10 steps each)")
	chains := flag.Int("chains", 1000, "chains")
	be := flag.String("backend", "", "backend (cpu, cuda, auto)")
	out := flag.String("json", "-", "JSON-lines output (- for stdout)")
	svg := flag.String("svg", "sggmc-circle.svg", "SVG plot output (empty: none)")
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
	w := os.Stdout
	if *out != "-" {
		if w, err = os.Create(*out); err != nil {
			log.Fatal(err)
		}
		defer w.Close()
	}
	enc := json.NewEncoder(w)
	newTarget := func(noise float64) *vmf.Mixture {
		m, err := vmf.NewMixture([]float64{1, 2}, []float64{5, 5}, [][]float64{
			{math.Cos(math.Pi / 3), math.Sin(math.Pi / 3)}, {math.Cos(-math.Pi / 3), math.Sin(-math.Pi / 3)}})
		if err != nil {
			log.Fatal(err)
		}
		m.GradNoise, m.Seed = noise, *seed
		return m
	}
	// E[x] by the trapezoidal rule on the circle (spectrally accurate for a smooth periodic integrand: the reference the running means are scored against).
	var ex, ey, z float64
	ref := newTarget(0)
	for i := 0; i < 1<<14; i++ {
		th := 2 * math.Pi * float64(i) / (1 << 14)
		p := math.Exp(ref.LogPdf([]float64{math.Cos(th), math.Sin(th)}))
		ex, ey, z = ex+p*math.Cos(th), ey+p*math.Sin(th), z+p
	}
	ex, ey = ex/z, ey/z
	log.Printf("exact E[x] = (%.6f, %.6f)", ex, ey)
	x0 := tensor.NewHost(*chains, 1, 2)
	for c := 0; c < *chains; c++ {
		a := 2 * math.Pi * float64(c) / float64(*chains)
		x0.Set(c, 0, 0, math.Cos(a))
		x0.Set(c, 0, 1, math.Sin(a))
	}
	if x0, err = backend.UploadNew(b, x0); err != nil { // the samplers take their starting points on b
		log.Fatal(err)
	}
	chart := svgplot.Chart{Title: "toy circle: error of the running mean of x", XLabel: "wall time (s)", YLabel: "‖Ê[x] − E[x]‖"}
	for _, m := range []struct {
		name        string
		noise, vhat float64
		eps         float64
	}{{"exact-gradient", 0, 0, 0.01}, {"noise-VHat1000", 1000, 1000, 1e-3}, {"noise-VHat0", 1000, 0, 1e-3}} {
		s, err := sggmc.New(b, newTarget(m.noise), x0, sggmc.Config{Step: m.eps, Friction: 1, L: 10, VHat: m.vhat, Seed: *seed})
		if err != nil {
			log.Fatal(err)
		}
		host := tensor.NewHost(*chains, 1, 2)
		cv := svgplot.Curve{Name: m.name}
		burn := *iters / 10
		var sx, sy, n float64
		start := time.Now()
		for it := 1; it <= *iters; it++ {
			if err := s.Sample(); err != nil {
				log.Fatal(err)
			}
			if it <= burn {
				continue
			}
			if err := b.Download(host, s.X()); err != nil {
				log.Fatal(err)
			}
			for c := 0; c < *chains; c++ {
				sx, sy, n = sx+host.At(c, 0, 0), sy+host.At(c, 0, 1), n+1
			}
			if it%50 == 0 || it == *iters {
				p := point{m.name, int(n), time.Since(start).Seconds(), sx / n, sy / n, math.Hypot(sx/n-ex, sy/n-ey)}
				if err := enc.Encode(p); err != nil {
					log.Fatal(err)
				}
				cv.X, cv.Y = append(cv.X, p.Seconds), append(cv.Y, p.Err)
			}
		}
		s.Close()
		chart.Curves = append(chart.Curves, cv)
	}
	if *svg != "" {
		if err := chart.WriteFile(*svg); err != nil {
			log.Fatal(err)
		}
	}
}
