// Package svgplot writes small line plots as standalone SVG files for the examples. It wraps gonum.org/v1/plot,
// drawn through its vgsvg back end: several named curves with a legend, on linear axes with rounded ticks
// (plot.DefaultTicks) or on log-scaled axes (plot.LogScale) with ticks at powers of ten, for times and errors
// spanning decades. A curve may carry its own colour, so that a method keeps one colour across figures, and may be
// drawn thin and light, so that many overlapping runs (one per seed) stay readable.
//
// The package arranges the figure and draws it all through gonum/plot. It adds what the examples need on top:
// gaps where a curve has no value, errors instead of panics for data that cannot be drawn, a legend beside the plot
// with one entry per name, and files that are either written whole or not at all.
package svgplot

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/geovb/geovb/examples/internal/outfile"
)

// Curve is one named polyline. Points with a non-finite coordinate are skipped (they break the line), and so are
// points with a non-positive coordinate on a log axis, which has no place for them. A point left alone between
// two gaps is drawn as a dot.
type Curve struct {
	Name string
	X, Y []float64
	// Color is an SVG colour, written "#rrggbb" or "#rgb" or as one of the basic colour keywords ("red",
	// "gray" …); empty takes the palette colour of the curve's index. Setting it lets a figure with several
	// curves per name (one per seed) draw them all alike, and lets a method keep its colour across figures.
	Color string
	// Thin draws the curve narrow and translucent: many overlapping runs then show their spread instead of a
	// solid block.
	Thin bool
}

// Chart is a line chart. Curves that share a Name share one legend entry (the first one's colour), so that a
// method drawn once per seed is named once; a curve with an empty Name has no legend entry.
type Chart struct {
	Title, XLabel, YLabel string
	Width, Height         int // pixels (720×440 if zero); a pixel is a CSS pixel, 1/96 inch
	// LogX and LogY scale the axis by log₁₀, with ticks at powers of ten; data spanning decades (run times over
	// a size grid, an error shrinking over time) is otherwise squashed into one corner.
	LogX, LogY bool
	Curves     []Curve
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

// Sizes, in CSS pixels converted to vg lengths (points).
const (
	px = vg.Inch / 96

	defaultWidth, defaultHeight = 720, 440

	lineWidth   = 1.5 * px // an ordinary curve
	thinWidth   = 0.7 * px // a Thin curve …
	thinAlpha   = 0.35     // … drawn with this opacity
	swatchWidth = 3 * px   // the line beside a legend entry
	dotRadius   = 2 * px   // a point left alone between gaps

	margin    = 8 * px  // around the figure
	legendGap = 12 * px // between the plot and the legend
	legendTop = 36 * px // from the top of the figure to the legend's first entry
)

var (
	sans     = font.Font{Typeface: "Liberation", Variant: "Sans"}
	gridGray = color.Gray{Y: 0xdd}
)

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

// axisRange is the fitted range of one axis in data units.
type axisRange struct {
	log    bool
	lo, hi float64
	// On a log axis, decades first, first+step … carry labels.
	first, step int
}

// ok reports whether v can be drawn on the axis.
func (a *axisRange) ok(v float64) bool { return finite(v) && (!a.log || v > 0) }

// decade returns the k with 10ᵏ ≤ v < 10ᵏ⁺¹, for v > 0, correcting the rounding of math.Log10 at exact powers.
func decade(v float64) int {
	k := int(math.Floor(math.Log10(v)))
	if math.Pow10(k+1) <= v {
		k++
	} else if math.Pow10(k) > v {
		k--
	}
	return k
}

// fit sets the axis range to the data range [lo, hi] widened to whole ticks: to round steps (see niceStep) on a
// linear axis, where plot.DefaultTicks then places its labels, to whole decades on a log axis. A log axis labels every
// decade, or every second, third … decade so that there are at most about eight labels.
func (a *axisRange) fit(lo, hi float64) error {
	if a.log {
		k0, k1 := decade(lo), decade(hi)
		if math.Pow10(k1) < hi {
			k1++
		}
		if k0 == k1 {
			k0, k1 = k0-1, k1+1
		}
		a.step = max(1, (k1-k0+7)/8)
		a.first = k0
		k1 = k0 + (k1-k0+a.step-1)/a.step*a.step
		a.lo, a.hi = math.Pow10(k0), math.Pow10(k1)
		if a.lo == 0 || math.IsInf(a.hi, 0) {
			return fmt.Errorf("svgplot: log axis from %g to %g is beyond the range of float64", lo, hi)
		}
		return nil
	}
	if lo == hi {
		lo, hi = lo-1, hi+1
	}
	step := niceStep(hi-lo, 6)
	a.lo, a.hi = math.Floor(lo/step)*step, math.Ceil(hi/step)*step
	return nil
}

// logTicks marks the decades of a log axis, labelling every step-th one from first; when every decade is
// labelled, it adds unlabelled ticks at 2 … 9 times each decade. It stands in for plot.LogTicks, whose decades
// are powers of ten accumulated by repeated multiplication and so drift off the labels (1.0000000000000004e-06)
// over a few decades.
type logTicks struct{ first, step int }

func (t logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for k := decade(lo); ; k++ {
		v := math.Pow10(k)
		if v > hi*(1+1e-12) {
			break
		}
		tk := plot.Tick{Value: v}
		if (k-t.first)%t.step == 0 {
			tk.Label = decadeLabel(k)
		}
		ticks = append(ticks, tk)
		if t.step > 1 {
			continue
		}
		for m := 2; m < 10 && float64(m)*v <= hi; m++ {
			ticks = append(ticks, plot.Tick{Value: float64(m) * v})
		}
	}
	return ticks
}

// decadeLabel prints 10ᵏ in full near 1 and as 1eK far from it.
func decadeLabel(k int) string {
	if k < -4 || k > 5 {
		return "1e" + strconv.Itoa(k)
	}
	return strconv.FormatFloat(math.Pow10(k), 'f', -1, 64)
}

// parseColor reads a colour written as "#rrggbb", "#rgb" or a basic colour keyword.
func parseColor(s string) (color.NRGBA, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if c, ok := keywords[s]; ok {
		s = c
	}
	if h, ok := strings.CutPrefix(s, "#"); ok && (len(h) == 3 || len(h) == 6) {
		if v, err := strconv.ParseUint(h, 16, 32); err == nil {
			if len(h) == 3 {
				r, g, b := v>>8, v>>4&0xf, v&0xf
				return color.NRGBA{R: uint8(r * 17), G: uint8(g * 17), B: uint8(b * 17), A: 0xff}, nil
			}
			return color.NRGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}, nil
		}
	}
	return color.NRGBA{}, fmt.Errorf("colour %q is neither #rrggbb, #rgb nor a basic colour keyword", s)
}

// keywords are the basic SVG colour keywords, with orange and both spellings of gray.
var keywords = map[string]string{
	"black": "#000000", "silver": "#c0c0c0", "gray": "#808080", "grey": "#808080", "white": "#ffffff",
	"maroon": "#800000", "red": "#ff0000", "purple": "#800080", "fuchsia": "#ff00ff", "green": "#008000",
	"lime": "#00ff00", "olive": "#808000", "yellow": "#ffff00", "navy": "#000080", "blue": "#0000ff",
	"teal": "#008080", "aqua": "#00ffff", "orange": "#ffa500",
}

// swatch is a legend entry's thumbnail: a short, opaque line in the curve's colour, also for Thin curves.
type swatch struct{ color color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(draw.LineStyle{Color: s.color, Width: swatchWidth}, c.Min.X, y, c.Max.X, y)
}

// figure is a chart laid out for drawing.
type figure struct {
	w, h   vg.Length
	plot   *plot.Plot
	legend plot.Legend
}

// runs splits a curve into its runs of drawable points.
func runs(cv *Curve, ax, ay *axisRange) []plotter.XYs {
	var out []plotter.XYs
	var cur plotter.XYs
	for i := range cv.X {
		if !ax.ok(cv.X[i]) || !ay.ok(cv.Y[i]) {
			if len(cur) > 0 {
				out, cur = append(out, cur), nil
			}
			continue
		}
		cur = append(cur, plotter.XY{X: cv.X[i], Y: cv.Y[i]})
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// axes returns the fitted axes of the drawable points. A curve that has finite points but loses all of them to a
// log axis is an error: drawing the chart without it, or with an empty box, would hide the caller's mistake.
func (c *Chart) axes() (ax, ay axisRange, err error) {
	ax, ay = axisRange{log: c.LogX}, axisRange{log: c.LogY}
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
			x0, x1 = min(x0, cv.X[i]), max(x1, cv.X[i])
			y0, y1 = min(y0, cv.Y[i]), max(y1, cv.Y[i])
		}
		if nFinite > 0 && nDrawn == 0 {
			return ax, ay, fmt.Errorf("svgplot: curve %q has no point with positive coordinates on the log axis", cv.Name)
		}
	}
	if x0 > x1 {
		return ax, ay, errors.New("svgplot: no finite points to plot")
	}
	if err := ax.fit(x0, x1); err != nil {
		return ax, ay, err
	}
	return ax, ay, ay.fit(y0, y1)
}

// setAxis applies a fitted range to a plot axis, with its label and fonts.
func setAxis(a *plot.Axis, r *axisRange, label string) {
	a.Label.Text = label
	a.Label.TextStyle.Font = font.From(sans, 12*px)
	a.Tick.Label.Font = font.From(sans, 11*px)
	a.Padding = 0
	a.Min, a.Max = r.lo, r.hi
	if r.log {
		a.Scale = plot.LogScale{}
		a.Tick.Marker = logTicks{first: r.first, step: r.step}
	}
}

// layout checks the chart and arranges it as a gonum/plot plot and a legend to draw beside it. It draws nothing.
func (c *Chart) layout() (*figure, error) {
	ax, ay, err := c.axes()
	if err != nil {
		return nil, err
	}
	f := &figure{w: defaultWidth * px, h: defaultHeight * px, plot: plot.New(), legend: plot.NewLegend()}
	if c.Width > 0 && c.Height > 0 {
		f.w, f.h = vg.Length(c.Width)*px, vg.Length(c.Height)*px
	}
	p := f.plot
	p.BackgroundColor = nil // the whole figure is filled white before drawing
	p.Title.Text = c.Title
	p.Title.TextStyle.Font = font.From(sans, 14*px)
	p.Title.Padding = 8 * px

	grid := plotter.NewGrid()
	grid.Vertical = draw.LineStyle{Color: gridGray, Width: 1 * px}
	grid.Horizontal = grid.Vertical
	p.Add(grid)

	f.legend.TextStyle.Font = font.From(sans, 12*px)
	f.legend.Top, f.legend.Left = true, true
	f.legend.ThumbnailWidth = 20 * px
	f.legend.Padding = 5 * px
	named := map[string]bool{}
	for i := range c.Curves {
		cv := &c.Curves[i]
		spec := cv.Color
		if spec == "" {
			spec = palette[i%len(palette)]
		}
		col, err := parseColor(spec)
		if err != nil {
			return nil, fmt.Errorf("svgplot: curve %q: %w", cv.Name, err)
		}
		line := draw.LineStyle{Color: col, Width: lineWidth}
		if cv.Thin {
			line.Width = thinWidth
			line.Color = color.NRGBA{R: col.R, G: col.G, B: col.B, A: uint8(math.Round(thinAlpha * 255))}
		}
		for _, run := range runs(cv, &ax, &ay) {
			if len(run) == 1 {
				p.Add(&plotter.Scatter{XYs: run, GlyphStyle: draw.GlyphStyle{
					Color: line.Color, Radius: dotRadius, Shape: draw.CircleGlyph{}}})
				continue
			}
			p.Add(&plotter.Line{XYs: run, LineStyle: line})
		}
		if cv.Name != "" && !named[cv.Name] {
			named[cv.Name] = true
			f.legend.Add(cv.Name, swatch{col})
		}
	}
	// Adding plotters widens the axes to their data; the fitted ranges replace that.
	setAxis(&p.X, &ax, c.XLabel)
	setAxis(&p.Y, &ay, c.YLabel)
	return f, nil
}

// draw draws the figure onto the canvas: a white background, the plot, and the legend to its right.
func (f *figure) draw(dc draw.Canvas) {
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	area := draw.Crop(dc, margin, -margin, margin, -margin)
	if r := f.legend.Rectangle(area); r.Max.X > r.Min.X {
		w := r.Max.X - r.Min.X
		f.plot.Draw(draw.Crop(area, 0, -(w + legendGap), 0, 0))
		f.legend.Draw(draw.Crop(area, area.Max.X-area.Min.X-w, 0, 0, -(legendTop - margin)))
		return
	}
	f.plot.Draw(area)
}

// Write renders the chart as SVG. It writes nothing when the chart cannot be drawn: when a curve's X and Y differ
// in length, when a curve's colour cannot be read, when no curve has a drawable point (an empty chart included),
// or when a curve has finite points but none that a log axis can show.
func (c *Chart) Write(w io.Writer) error {
	var buf bytes.Buffer
	if err := c.render(&buf); err != nil {
		return err
	}
	_, err := buf.WriteTo(w)
	return err
}

// render writes the SVG into buf, turning a panic inside gonum/plot into an error.
func (c *Chart) render(buf *bytes.Buffer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("svgplot: drawing %q: %v", c.Title, r)
		}
	}()
	f, err := c.layout()
	if err != nil {
		return err
	}
	cv := vgsvg.New(f.w, f.h)
	f.draw(draw.New(cv))
	_, err = cv.WriteTo(buf)
	return err
}

// WriteFile renders the chart into the file path, atomically: the chart is rendered in memory, written to a
// temporary file beside path and renamed over it, so that path holds either the whole new figure or what it held
// before — never an empty or truncated file, also when the chart cannot be drawn or the disk fills up.
func (c *Chart) WriteFile(path string) error {
	var buf bytes.Buffer
	if err := c.render(&buf); err != nil {
		return fmt.Errorf("%w (not writing %s)", err, path)
	}
	if err := outfile.Write(path, func(w io.Writer) error { _, err := w.Write(buf.Bytes()); return err }); err != nil {
		return fmt.Errorf("svgplot: %w", err)
	}
	return nil
}
