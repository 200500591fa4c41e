// Package svgplot writes small line plots as standalone SVG files for the examples: several named curves on linear
// axes with rounded ticks and a legend, using only the standard library.
package svgplot

import (
	"bufio"
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"os"
)

// Curve is one named polyline. Points with a non-finite coordinate are skipped (they break the line).
type Curve struct {
	Name string
	X, Y []float64
}

// Chart is a line chart.
type Chart struct {
	Title, XLabel, YLabel string
	Width, Height         int // pixels (720×440 if zero)
	Curves                []Curve
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// niceStep returns a round tick spacing (1, 2 or 5 × 10ᵏ) giving about n ticks over span.
func niceStep(span float64, n int) float64 {
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// bounds returns the data range of the finite points, widened when degenerate.
func (c *Chart) bounds() (x0, x1, y0, y1 float64, err error) {
	x0, y0, x1, y1 = math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, cv := range c.Curves {
		if len(cv.X) != len(cv.Y) {
			return 0, 0, 0, 0, fmt.Errorf("svgplot: curve %q has %d x and %d y values", cv.Name, len(cv.X), len(cv.Y))
		}
		for i := range cv.X {
			if finite(cv.X[i]) && finite(cv.Y[i]) {
				x0, x1 = math.Min(x0, cv.X[i]), math.Max(x1, cv.X[i])
				y0, y1 = math.Min(y0, cv.Y[i]), math.Max(y1, cv.Y[i])
			}
		}
	}
	if x0 > x1 {
		return 0, 0, 0, 0, errors.New("svgplot: no finite points to plot")
	}
	if x1 == x0 {
		x0, x1 = x0-1, x1+1
	}
	if y1 == y0 {
		y0, y1 = y0-1, y1+1
	}
	return x0, x1, y0, y1, nil
}

// Write renders the chart as SVG.
func (c *Chart) Write(w io.Writer) error {
	x0, x1, y0, y1, err := c.bounds()
	if err != nil {
		return err
	}
	W, H := float64(c.Width), float64(c.Height)
	if W <= 0 || H <= 0 {
		W, H = 720, 440
	}
	const left, right, top, bottom = 80.0, 170.0, 36.0, 56.0
	pw, ph := W-left-right, H-top-bottom
	sx, sy := niceStep(x1-x0, 6), niceStep(y1-y0, 6)
	x0, x1 = math.Floor(x0/sx)*sx, math.Ceil(x1/sx)*sx
	y0, y1 = math.Floor(y0/sy)*sy, math.Ceil(y1/sy)*sy
	px := func(x float64) float64 { return left + (x-x0)/(x1-x0)*pw }
	py := func(y float64) float64 { return top + ph - (y-y0)/(y1-y0)*ph }
	bw := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }
	esc := html.EscapeString
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" font-family="sans-serif" font-size="12">`+"\n", W, H)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%g" y="20" text-anchor="middle" font-size="14">%s</text>`+"\n", left+pw/2, esc(c.Title))
	for x := x0; x <= x1+sx/2; x += sx {
		p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`, px(x), top, px(x), top+ph)
		p(`<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px(x), top+ph+16, fmtTick(x, sx))
	}
	for y := y0; y <= y1+sy/2; y += sy {
		p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`, left, py(y), left+pw, py(y))
		p(`<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, py(y)+4, fmtTick(y, sy))
	}
	p(`<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="black"/>`+"\n", left, top, pw, ph)
	p(`<text x="%g" y="%g" text-anchor="middle">%s</text>`+"\n", left+pw/2, H-14, esc(c.XLabel))
	p(`<text transform="translate(18 %g) rotate(-90)" text-anchor="middle">%s</text>`+"\n", top+ph/2, esc(c.YLabel))
	for i, cv := range c.Curves {
		col := palette[i%len(palette)]
		open := false
		for j := range cv.X {
			if !finite(cv.X[j]) || !finite(cv.Y[j]) {
				if open {
					p(`" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", col)
					open = false
				}
				continue
			}
			if !open {
				p(`<polyline points="`)
				open = true
			}
			p("%.2f,%.2f ", px(cv.X[j]), py(cv.Y[j]))
		}
		if open {
			p(`" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", col)
		}
		ly := top + 14 + float64(i)*18
		p(`<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="3"/>`, left+pw+10, ly-4, left+pw+30, ly-4, col)
		p(`<text x="%g" y="%g">%s</text>`+"\n", left+pw+36, ly, esc(cv.Name))
	}
	p("</svg>\n")
	return bw.Flush()
}

// fmtTick prints a tick value with as many decimals as its spacing needs.
func fmtTick(v, step float64) string {
	d := 0
	if step < 1 {
		d = int(math.Ceil(-math.Log10(step) - 1e-9))
	}
	if math.Abs(v) < step*1e-9 {
		v = 0
	}
	return fmt.Sprintf("%.*f", d, v)
}

// WriteFile renders the chart into the file path.
func (c *Chart) WriteFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := c.Write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
