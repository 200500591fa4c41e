// Package nfacompare is the size sweep shared by examples/rcg-nssm and examples/rcg-nfa.
package nfacompare

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/geovb/geovb/algos/rcg"
	rcgplot "github.com/geovb/geovb/examples/internal/rcgplot"
	"github.com/geovb/geovb/examples/internal/svgplot"
	"github.com/geovb/geovb/models/nfa"
)

// Options are the flags both examples share.
type Options struct {
	Dynamic       bool          // NSSM instead of NFA
	Grid, Methods string        // comma-separated data sizes and methods (RCG first)
	Seeds         int           // initialisations per size and method
	RCGCap        time.Duration // CPU-time cap of each RCG run
	Cap           float64       // the others' cap, × RCG's median run time
	GH            bool          // Gauss–Hermite moments instead of Taylor
	D, H          int           // state dimension and hidden units (0: 5 and 20)
	Eps           float64       // convergence threshold (0: 1e-5·T/80)
	SVG           string        // figure path
}

// Main runs rcg.SweepNFA with o.Methods (RCG first: it sets the target and the others' caps) over the sizes of
// o.Grid and writes JSON lines to stdout and an SVG to o.SVG.
func Main(o Options) error {
	methods := strings.Split(o.Methods, ",")
	for i := range methods {
		methods[i] = strings.TrimSpace(methods[i])
	}
	if len(methods) == 0 || methods[0] != "RCG" {
		return fmt.Errorf("methods %q: RCG must come first", o.Methods)
	}
	mo := nfa.Taylor
	if o.GH {
		mo = nfa.GaussHermite
	}
	series := map[string]*svgplot.Curve{}
	for _, m := range methods {
		series[m] = &svgplot.Curve{Name: m, Color: rcgplot.Colors[m]}
	}
	enc := json.NewEncoder(os.Stdout)
	for _, f := range strings.Split(o.Grid, ",") {
		T, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("data size %q: %w", f, err)
		}
		sw := rcg.Sweep{Dynamic: o.Dynamic, T: T, Seeds: o.Seeds, D: o.D, H: o.H, Moments: mo, Eps: o.Eps,
			Methods: methods, RCGCap: o.RCGCap, CapFactor: o.Cap}
		runs, err := rcg.SweepNFA(sw)
		if err != nil {
			return err
		}
		var fin []float64
		for _, tr := range runs["RCG"] {
			fin = append(fin, tr.Final)
		}
		target := rcg.Median(fin) + sw.Tol()
		for _, m := range methods {
			s := rcgplot.Summarise(m, runs[m], target)
			s.N = T
			if err := enc.Encode(s); err != nil {
				return err
			}
			series[m].X = append(series[m].X, float64(T))
			series[m].Y = append(series[m].Y, s.MedianTTT)
		}
	}
	title := "NFA-SYN: median time to RCG's median final F"
	if o.Dynamic {
		title = "NSSM-SYN: median time to RCG's median final F"
	}
	p := svgplot.Chart{Title: title, XLabel: "samples", YLabel: "CPU time (s)", LogY: true}
	for _, m := range methods {
		p.Curves = append(p.Curves, *series[m])
	}
	return p.WriteFile(o.SVG)
}
