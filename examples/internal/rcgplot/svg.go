// Package rcgplot holds what the paper 004 examples share: a minimal SVG line plot (log-scaled axes optional)
// and the JSON-lines summary of time-to-target per method.
package rcgplot

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
)

// Series is one polyline of a plot.
type Series struct {
	Name  string
	Color string
	X, Y  []float64
	Thin  bool // drawn light (e.g. individual seeds)
}

// Plot is a line plot.
type Plot struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool
	Series                []Series
}

func tr(v float64, log bool) float64 {
	if log {
		return math.Log10(v)
	}
	return v
}

// WriteSVG writes p as a 640×420 SVG to w. Points that are non-finite or non-positive on a log axis are skipped.
func (p *Plot) WriteSVG(w io.Writer) error {
	const W, H, L, R, T, B = 640.0, 420.0, 70.0, 150.0, 30.0, 50.0
	x0, x1, y0, y1 := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	ok := func(x, y float64) bool {
		return !(math.IsNaN(x) || math.IsInf(x, 0) || math.IsNaN(y) || math.IsInf(y, 0) || (p.LogX && x <= 0) || (p.LogY && y <= 0))
	}
	for _, s := range p.Series {
		for i := range s.X {
			if ok(s.X[i], s.Y[i]) {
				x, y := tr(s.X[i], p.LogX), tr(s.Y[i], p.LogY)
				x0, x1, y0, y1 = math.Min(x0, x), math.Max(x1, x), math.Min(y0, y), math.Max(y1, y)
			}
		}
	}
	if x0 > x1 {
		x0, x1, y0, y1 = 0, 1, 0, 1
	}
	if x1 == x0 {
		x1 = x0 + 1
	}
	if y1 == y0 {
		y1 = y0 + 1
	}
	px := func(x float64) float64 { return L + (tr(x, p.LogX)-x0)/(x1-x0)*(W-L-R) }
	py := func(y float64) float64 { return H - B - (tr(y, p.LogY)-y0)/(y1-y0)*(H-T-B) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" font-family="sans-serif" font-size="11">`+"\n", W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%g" y="18" font-size="13">%s</text>`+"\n", L, esc(p.Title))
	fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="black"/>`+"\n", L, T, W-L-R, H-T-B)
	for i := 0; i <= 4; i++ {
		fx, fy := x0+(x1-x0)*float64(i)/4, y0+(y1-y0)*float64(i)/4
		lx, ly := fx, fy
		if p.LogX {
			lx = math.Pow(10, fx)
		}
		if p.LogY {
			ly = math.Pow(10, fy)
		}
		X := L + float64(i)/4*(W-L-R)
		Y := H - B - float64(i)/4*(H-T-B)
		fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">%.3g</text>`+"\n", X, H-B+14, lx)
		fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="end">%.6g</text>`+"\n", L-4, Y+4, ly)
	}
	fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">%s</text>`+"\n", L+(W-L-R)/2, H-12, esc(p.XLabel))
	fmt.Fprintf(&b, `<text x="14" y="%g" transform="rotate(-90 14 %g)" text-anchor="middle">%s</text>`+"\n", T+(H-T-B)/2, T+(H-T-B)/2, esc(p.YLabel))
	legend := map[string]bool{}
	ly := T + 10
	for _, s := range p.Series {
		var pts []string
		for i := range s.X {
			if ok(s.X[i], s.Y[i]) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.X[i]), py(s.Y[i])))
			}
		}
		width, op := 2.0, 1.0
		if s.Thin {
			width, op = 0.7, 0.35
		}
		if len(pts) > 0 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="%g" stroke-opacity="%g" points="%s"/>`+"\n", s.Color, width, op, strings.Join(pts, " "))
		}
		if !legend[s.Name] {
			legend[s.Name] = true
			fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="2"/><text x="%g" y="%g">%s</text>`+"\n",
				W-R+10, ly, W-R+30, ly, s.Color, W-R+34, ly+4, esc(s.Name))
			ly += 16
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Save writes the plot to path.
func (p *Plot) Save(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := p.WriteSVG(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// Colors per method.
var Colors = map[string]string{"RCG": "#d62728", "RG": "#ff7f0e", "CG": "#1f77b4", "GD": "#7f7f7f", "VBEM": "#2ca02c"}
