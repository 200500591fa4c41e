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

// Main runs rcg.SweepNFA with the comma-separated methods (RCG first: it sets the target and the others' caps) over
// the comma-separated sizes in grid and writes JSON lines to stdout and an SVG to svg.
func Main(dyn bool, grid, methodList string, seeds int, rcgCap time.Duration, capF float64, gh bool, svg string) error {
	methods := strings.Split(methodList, ",")
	for i := range methods {
		methods[i] = strings.TrimSpace(methods[i])
	}
	if len(methods) == 0 || methods[0] != "RCG" {
		return fmt.Errorf("methods %q: RCG must come first", methodList)
	}
	mo := nfa.Taylor
	if gh {
		mo = nfa.GaussHermite
	}
	series := map[string]*svgplot.Curve{}
	for _, m := range methods {
		series[m] = &svgplot.Curve{Name: m, Color: rcgplot.Colors[m]}
	}
	enc := json.NewEncoder(os.Stdout)
	for _, f := range strings.Split(grid, ",") {
		T, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return err
		}
		runs, err := rcg.SweepNFA(dyn, T, seeds, methods, rcgCap, capF, mo)
		if err != nil {
			return err
		}
		var fin []float64
		for _, tr := range runs["RCG"] {
			fin = append(fin, tr.Final)
		}
		target := rcg.Median(fin) + 1e-5*float64(T)/80
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
	if dyn {
		title = "NSSM-SYN: median time to RCG's median final F"
	}
	p := svgplot.Chart{Title: title, XLabel: "samples", YLabel: "CPU time (s)", LogY: true}
	for _, m := range methods {
		p.Curves = append(p.Curves, *series[m])
	}
	return p.WriteFile(svg)
}
