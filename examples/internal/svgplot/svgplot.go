// Package svgplot writes small line plots as standalone SVG files for the examples, using only the standard
// library: several named curves with a legend, on linear axes with rounded ticks or on log-scaled axes with ticks at
// powers of ten (for times and errors spanning decades). A curve may carry its own colour, so that a method keeps
// one colour across figures, and may be drawn thin and light, so that many overlapping runs (one per seed) stay
// readable.
package svgplot

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"strconv"
)

// Curve is one named polyline. Points with a non-finite coordinate are skipped (they break the line), and so are
// points with a non-positive coordinate on a log axis, which has no place for them.
type Curve struct {
	Name string
	X, Y []float64
	// Color is an SVG colour; empty takes the palette colour of the curve's index. Setting it lets a figure with
	// several curves per name (one per seed) draw them all alike, and lets a method keep its colour across figures.
	Color string
	// Thin draws the curve narrow and translucent: many overlapping runs then show their spread instead of a
	// solid block.
	Thin bool
}

// Chart is a line chart. Curves that share a Name share one legend entry (the first one's colour), so that a
// method drawn once per seed is named once.
type Chart struct {
	Title, XLabel, YLabel string
	Width, Height         int // pixels (720×440 if zero)
	// LogX and LogY scale the axis by log₁₀, with ticks at powers of ten; data spanning decades (run times over
	// a size grid, an error shrinking over time) is otherwise squashed into one corner.
	LogX, LogY bool
	Curves     []Curve
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

// axis maps the data values of one axis into the plot box. It works in scaled units — the value itself, or its
// log₁₀ on a log axis — so that both kinds share the drawing code.
type axis struct {
	log          bool
	lo, hi, step float64 // range and tick spacing, in scaled units
}

// ok reports whether v can be drawn on the axis.
func (a *axis) ok(v float64) bool { return finite(v) && (!a.log || v > 0) }

// scale returns v in scaled units.
func (a *axis) scale(v float64) float64 {
	if a.log {
		return math.Log10(v)
	}
	return v
}

// frac returns where scaled u lies on the axis, 0 at lo and 1 at hi.
func (a *axis) frac(u float64) float64 { return (u - a.lo) / (a.hi - a.lo) }

// fit widens the scaled data range [lo, hi] to whole ticks: round steps on a linear axis, whole decades on a log
// axis, thinned to every second, third … decade so that there are at most about eight ticks.
func (a *axis) fit(lo, hi float64) {
	if hi == lo {
		lo, hi = lo-1, hi+1
	}
	if a.log {
		lo, hi = math.Floor(lo), math.Ceil(hi)
		a.step = math.Max(1, math.Ceil((hi-lo)/8))
		a.lo, a.hi = lo, lo+math.Ceil((hi-lo)/a.step)*a.step
		return
	}
	a.step = niceStep(hi-lo, 6)
	a.lo, a.hi = math.Floor(lo/a.step)*a.step, math.Ceil(hi/a.step)*a.step
}

// ticks returns the tick positions in scaled units.
func (a *axis) ticks() []float64 {
	var t []float64
	for u := a.lo; u <= a.hi+a.step/2; u += a.step {
		t = append(t, u)
	}
	return t
}

// label prints the tick at scaled u.
func (a *axis) label(u float64) string {
	if !a.log {
		return fmtTick(u, a.step)
	}
	k := int(math.Round(u))
	if k < -4 || k > 5 {
		return fmt.Sprintf("1e%d", k)
	}
	return strconv.FormatFloat(math.Pow10(k), 'f', -1, 64)
}

// axes returns the fitted axes of the drawable points. A curve that has finite points but loses all of them to a
// log axis is an error: drawing the chart without it, or with an empty box, would hide the caller's mistake.
func (c *Chart) axes() (ax, ay axis, err error) {
	ax, ay = axis{log: c.LogX}, axis{log: c.LogY}
	x0, y0, x1, y1 := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, cv := range c.Curves {
		if len(cv.X) != len(cv.Y) {
			return ax, ay, fmt.Errorf("svgplot: curve %q has %d x and %d y values", cv.Name, len(cv.X), len(cv.Y))
		}
		nFinite, nDrawn := 0, 0
		for i := range cv.X {
			if !finite(cv.X[i]) || !finite(cv.Y[i]) {
				continue
			}
			nFinite++
			if !ax.ok(cv.X[i]) || !ay.ok(cv.Y[i]) {
				continue
			}
			nDrawn++
			x, y := ax.scale(cv.X[i]), ay.scale(cv.Y[i])
			x0, x1 = math.Min(x0, x), math.Max(x1, x)
			y0, y1 = math.Min(y0, y), math.Max(y1, y)
		}
		if nFinite > 0 && nDrawn == 0 {
			return ax, ay, fmt.Errorf("svgplot: curve %q has no point with positive coordinates on the log axis", cv.Name)
		}
	}
	if x0 > x1 {
		return ax, ay, errors.New("svgplot: no finite points to plot")
	}
	ax.fit(x0, x1)
	ay.fit(y0, y1)
	return ax, ay, nil
}

// Write renders the chart as SVG. It writes nothing when the chart cannot be drawn.
func (c *Chart) Write(w io.Writer) error {
	ax, ay, err := c.axes()
	if err != nil {
		return err
	}
	W, H := float64(c.Width), float64(c.Height)
	if W <= 0 || H <= 0 {
		W, H = 720, 440
	}
	const left, right, top, bottom = 80.0, 170.0, 36.0, 56.0
	pw, ph := W-left-right, H-top-bottom
	px := func(u float64) float64 { return left + ax.frac(u)*pw }
	py := func(u float64) float64 { return top + ph - ay.frac(u)*ph }
	bw := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }
	esc := html.EscapeString
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" font-family="sans-serif" font-size="12">`+"\n", W, H)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%g" y="20" text-anchor="middle" font-size="14">%s</text>`+"\n", left+pw/2, esc(c.Title))
	for _, u := range ax.ticks() {
		p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`, px(u), top, px(u), top+ph)
		p(`<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px(u), top+ph+16, ax.label(u))
	}
	for _, u := range ay.ticks() {
		p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`, left, py(u), left+pw, py(u))
		p(`<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, py(u)+4, ay.label(u))
	}
	p(`<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="black"/>`+"\n", left, top, pw, ph)
	p(`<text x="%g" y="%g" text-anchor="middle">%s</text>`+"\n", left+pw/2, H-14, esc(c.XLabel))
	p(`<text transform="translate(18 %g) rotate(-90)" text-anchor="middle">%s</text>`+"\n", top+ph/2, esc(c.YLabel))
	named := map[string]bool{}
	for i, cv := range c.Curves {
		col := cv.Color
		if col == "" {
			col = palette[i%len(palette)]
		}
		style := `stroke-width="1.5"`
		if cv.Thin {
			style = `stroke-width="0.7" stroke-opacity="0.35"`
		}
		end := fmt.Sprintf(`" fill="none" stroke="%s" %s/>`+"\n", esc(col), style)
		open := false
		for j := range cv.X {
			if !ax.ok(cv.X[j]) || !ay.ok(cv.Y[j]) {
				if open {
					p("%s", end)
					open = false
				}
				continue
			}
			if !open {
				p(`<polyline points="`)
				open = true
			}
			p("%.2f,%.2f ", px(ax.scale(cv.X[j])), py(ay.scale(cv.Y[j])))
		}
		if open {
			p("%s", end)
		}
		if named[cv.Name] {
			continue
		}
		ly := top + 14 + float64(len(named))*18
		named[cv.Name] = true
		p(`<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="3"/>`, left+pw+10, ly-4, left+pw+30, ly-4, esc(col))
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

// WriteFile renders the chart into the file path. The chart is rendered in memory first, so that a chart that
// cannot be drawn leaves no empty or truncated file behind.
func (c *Chart) WriteFile(path string) error {
	var buf bytes.Buffer
	if err := c.Write(&buf); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
