package svgplot

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// element is one parsed SVG element: its name, attributes, style properties and text.
type element struct {
	name  string
	attr  map[string]string
	style map[string]string
	text  string
	point [][2]float64 // a path's points, when it is made of straight lines only
	arc   bool         // the path has arcs (a dot)
}

// parse decodes the SVG as XML, failing the test on malformed output or on a document that is not one SVG
// element.
func parse(t *testing.T, svg []byte) []element {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var els []element
	cur := -1 // the element whose text is being read; -1 between elements
	depth := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if depth == 0 && (len(els) > 0 || e.Name.Local != "svg" || e.Name.Space != "http://www.w3.org/2000/svg") {
				t.Fatalf("top-level element %v, want a single svg element", e.Name)
			}
			depth++
			el := element{name: e.Name.Local, attr: map[string]string{}, style: map[string]string{}}
			for _, a := range e.Attr {
				el.attr[a.Name.Local] = a.Value
			}
			for _, kv := range strings.Split(el.attr["style"], ";") {
				if k, v, ok := strings.Cut(kv, ":"); ok {
					el.style[strings.TrimSpace(k)] = strings.TrimSpace(v)
				}
			}
			el.point, el.arc = pathPoints(t, el.attr["d"])
			els = append(els, el)
			cur = len(els) - 1
		case xml.EndElement:
			depth--
			cur = -1
		case xml.CharData:
			if cur >= 0 {
				els[cur].text += string(e)
			}
		}
	}
	if len(els) == 0 {
		t.Fatal("empty document")
	}
	return els
}

// pathPoints reads the points of path data made of M and L commands, and reports whether it has arcs.
func pathPoints(t *testing.T, d string) (pts [][2]float64, arc bool) {
	t.Helper()
	if strings.ContainsAny(d, "Aa") {
		return nil, true
	}
	d = strings.TrimSuffix(d, "Z")
	for f := range strings.FieldsFuncSeq(d, func(r rune) bool { return r == 'M' || r == 'L' }) {
		xs, ys, ok := strings.Cut(f, ",")
		x, err1 := strconv.ParseFloat(xs, 64)
		y, err2 := strconv.ParseFloat(ys, 64)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("path data %q", d)
		}
		pts = append(pts, [2]float64{x, y})
	}
	return pts, false
}

func render(t *testing.T, c *Chart) []element {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Write(&buf); err != nil {
		t.Fatal(err)
	}
	return parse(t, buf.Bytes())
}

// width formats a line width as the SVG writer does.
func width(w interface{ Points() float64 }) string {
	return strconv.FormatFloat(w.Points(), 'g', 5, 64)
}

// lines returns the stroked paths of the given colour and width, in drawing order.
func lines(els []element, col, w string) []element {
	var out []element
	for _, e := range els {
		if e.name == "path" && strings.EqualFold(e.style["stroke"], col) && e.style["stroke-width"] == w {
			out = append(out, e)
		}
	}
	return out
}

// dots returns the filled round paths of the given colour.
func dots(els []element, col string) []element {
	var out []element
	for _, e := range els {
		if e.name == "path" && e.arc && strings.EqualFold(e.style["fill"], col) {
			out = append(out, e)
		}
	}
	return out
}

// texts counts the text elements by content.
func texts(els []element) map[string]int {
	n := map[string]int{}
	for _, e := range els {
		if e.name == "text" {
			n[e.text]++
		}
	}
	return n
}

// grid returns the positions of the vertical and the horizontal grid lines.
func grid(els []element) (xs, ys []float64) {
	for _, e := range lines(els, colorHex(gridGray), width(1*px)) {
		p := e.point
		if len(p) != 2 {
			continue
		}
		if p[0][0] == p[1][0] {
			xs = append(xs, p[0][0])
		} else if p[0][1] == p[1][1] {
			ys = append(ys, p[0][1])
		}
	}
	return xs, ys
}

func colorHex(c interface{ RGBA() (r, g, b, a uint32) }) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
}

// The output is one well-formed SVG document of the requested size; each curve is drawn as paths in its palette
// colour, split at a NaN (the point left alone becomes a dot), whose points map the data linearly into the plot
// box; the legend and the labels name everything, escaped.
func TestWrite(t *testing.T) {
	c := Chart{Title: "a < b", XLabel: "time (s)", YLabel: "log-perplexity", Curves: []Curve{
		{Name: "gSGNHT", X: []float64{0, 10, 20}, Y: []float64{5000, 3000, 2500}},
		{Name: "S&GGMC", X: []float64{0, 10, math.NaN(), 30, 40, math.Inf(1), 50}, Y: []float64{5000, 4500, 1, 4200, 4100, 4000, 4000}},
	}}
	els := render(t, &c)
	if w, h := els[0].attr["width"], els[0].attr["height"]; w != "540pt" || h != "330pt" {
		t.Errorf("size %s × %s, want 540pt × 330pt (720 × 440 CSS pixels)", w, h)
	}
	a := lines(els, palette[0], width(lineWidth))
	b := lines(els, palette[1], width(lineWidth))
	if len(a) != 1 || len(a[0].point) != 3 || len(b) != 2 || len(b[0].point) != 2 || len(b[1].point) != 2 {
		t.Fatalf("paths %v / %v, want one of 3 points / two of 2 points", a, b)
	}
	if d := dots(els, palette[1]); len(d) != 1 {
		t.Errorf("%d dots for the point between NaN and Inf, want 1", len(d))
	}
	// Linear map: equal x steps give equal pixel steps; a larger y is drawn higher (the writer's coordinates
	// grow upwards inside its flipping group); pixel gaps are proportional to data gaps.
	p := a[0].point
	if math.Abs((p[1][0]-p[0][0])-(p[2][0]-p[1][0])) > 0.02 || !(p[1][1] < p[0][1]) {
		t.Errorf("points not mapped linearly: %v", p)
	}
	if r1, r2 := (p[1][1]-p[0][1])/2000, (p[2][1]-p[1][1])/500; math.Abs(r1-r2) > 1e-3*math.Abs(r1) {
		t.Errorf("y scale not linear: %v vs %v", r1, r2)
	}
	// The second curve starts where the first does.
	if q := b[0].point[0]; math.Abs(q[0]-p[0][0]) > 0.01 || math.Abs(q[1]-p[0][1]) > 0.01 {
		t.Errorf("curves start at %v and %v", p[0], q)
	}
	n := texts(els)
	for _, want := range []string{"gSGNHT", "S&GGMC", "a < b", "log-perplexity", "time (s)"} {
		if n[want] != 1 {
			t.Errorf("text %q appears %d times, want once", want, n[want])
		}
	}
}

// Width and Height are CSS pixels, written as points (3/4 pixel).
func TestSize(t *testing.T) {
	c := Chart{Width: 400, Height: 300, Curves: []Curve{{Name: "a", X: []float64{0, 1}, Y: []float64{0, 1}}}}
	svg := render(t, &c)[0]
	if w, h := svg.attr["width"], svg.attr["height"]; w != "300pt" || h != "225pt" {
		t.Errorf("size %s × %s, want 300pt × 225pt", w, h)
	}
}

func TestErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		chart Chart
		want  string
	}{
		{"no finite points", Chart{Curves: []Curve{{X: []float64{1}, Y: []float64{math.NaN()}}}}, "no finite points"},
		{"empty chart", Chart{Title: "empty"}, "no finite points"},
		{"length mismatch", Chart{Curves: []Curve{{Name: "m", X: []float64{1, 2}, Y: []float64{1}}}}, `"m"`},
		{"bad colour", Chart{Curves: []Curve{{Name: "c", Color: "1f77b4", X: []float64{1}, Y: []float64{1}}}}, `"c"`},
	} {
		var buf bytes.Buffer
		err := c.chart.Write(&buf)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one containing %s", c.name, err, c.want)
		}
		if buf.Len() != 0 {
			t.Errorf("%s: wrote %d bytes on error", c.name, buf.Len())
		}
	}
}

func TestNiceStep(t *testing.T) {
	for _, c := range []struct{ span, want float64 }{{10, 2}, {7, 2}, {0.3, 0.05}, {4500, 1000}, {1, 0.2}} {
		if got := niceStep(c.span, 6); math.Abs(got-c.want) > 1e-12*c.want {
			t.Errorf("niceStep(%v) = %v, want %v", c.span, got, c.want)
		}
	}
}

func TestParseColor(t *testing.T) {
	for s, want := range map[string]string{"#1f77b4": "#1f77b4", " #ABCDEF ": "#abcdef", "#fa0": "#ffaa00", "Gray": "#808080"} {
		c, err := parseColor(s)
		if err != nil || colorHex(c) != want || c.A != 0xff {
			t.Errorf("parseColor(%q) = %v, %v; want %s", s, c, err, want)
		}
	}
	for _, s := range []string{"", "1f77b4", "#12345", "#gggggg", "rgb(1,2,3)", "#1f77b4ff"} {
		if _, err := parseColor(s); err == nil {
			t.Errorf("parseColor(%q): no error", s)
		}
	}
}

func isPow10(v float64) bool {
	k := math.Round(math.Log10(v))
	return v > 0 && math.Abs(v/math.Pow(10, k)-1) < 1e-12
}

// labels returns the labelled ticks of an axis of the laid-out chart.
func labels(t *testing.T, c *Chart, x bool) map[float64]string {
	t.Helper()
	f, err := c.layout()
	if err != nil {
		t.Fatal(err)
	}
	a := &f.plot.Y
	if x {
		a = &f.plot.X
	}
	m := map[float64]string{}
	for _, tk := range a.Tick.Marker.Ticks(a.Min, a.Max) {
		if tk.Label != "" {
			m[tk.Value] = tk.Label
		}
	}
	return m
}

// On log axes the ticks are whole decades around the data, labelled exactly, each decade gets the same length,
// and points with a non-positive coordinate are skipped like NaN (breaking the line).
func TestLogAxes(t *testing.T) {
	c := Chart{LogX: true, LogY: true, Curves: []Curve{
		{Name: "RCG", X: []float64{0.5, 5, -1, 50, 500, 5000}, Y: []float64{2, 20, 3, 200, 2000, 0}},
	}}
	els := render(t, &c)
	segs := lines(els, palette[0], width(lineWidth))
	if len(segs) != 2 || len(segs[0].point) != 2 || len(segs[1].point) != 2 {
		t.Fatalf("paths %v, want two of two points (x = -1 and y = 0 skipped)", segs)
	}
	n := texts(els)
	for _, c := range []struct {
		got  map[float64]string
		want []string
	}{{labels(t, &c, true), []string{"0.1", "1", "10", "100", "1000"}}, {labels(t, &c, false), []string{"1", "10", "100", "1000", "10000"}}} {
		if len(c.got) != len(c.want) {
			t.Errorf("ticks %v, want %v", c.got, c.want)
		}
		for _, s := range c.want {
			v, _ := strconv.ParseFloat(s, 64)
			if c.got[v] != s {
				t.Errorf("tick %v labelled %q, want %q", v, c.got[v], s)
			}
			if n[s] == 0 {
				t.Errorf("tick label %q not drawn", s)
			}
		}
	}
	// The grid marks the labelled decades; one decade of data spans the pixels of one decade of grid, on both
	// axes.
	gx, gy := grid(els)
	if len(gx) != 5 || len(gy) != 5 {
		t.Fatalf("grid lines at %v, %v; want 5 and 5", gx, gy)
	}
	dx, dy := gx[1]-gx[0], gy[1]-gy[0]
	for i := 1; i < 4; i++ {
		if math.Abs(gx[i+1]-gx[i]-dx) > 0.01 || math.Abs(gy[i+1]-gy[i]-dy) > 0.01 {
			t.Errorf("decades of unequal length: %v, %v", gx, gy)
		}
	}
	for _, seg := range segs {
		p := seg.point
		if math.Abs(math.Abs(p[1][0]-p[0][0])-math.Abs(dx)) > 0.01 || math.Abs(math.Abs(p[1][1]-p[0][1])-math.Abs(dy)) > 0.01 {
			t.Errorf("segment %v does not span one decade (%v, %v)", p, dx, dy)
		}
	}
}

// Data over many decades gets at most about eight labels, all exact powers of ten; a linear y next to a log x
// keeps its negative values, on a range widened to round ticks.
func TestLogTicksThinned(t *testing.T) {
	c := Chart{LogX: true, Curves: []Curve{{Name: "a", X: []float64{1e-7, 1e9}, Y: []float64{-3, 4}}}}
	n := texts(render(t, &c))
	xt := labels(t, &c, true)
	if len(xt) < 3 || len(xt) > 9 {
		t.Errorf("%d x labels: %v", len(xt), xt)
	}
	for v, s := range xt {
		if w, err := strconv.ParseFloat(s, 64); !isPow10(v) || err != nil || w != v {
			t.Errorf("x tick %v labelled %q", v, s)
		}
		if n[s] != 1 {
			t.Errorf("x label %q drawn %d times", s, n[s])
		}
	}
	f, err := c.layout()
	if err != nil {
		t.Fatal(err)
	}
	if f.plot.X.Min != 1e-7 || f.plot.X.Max < 1e9 || f.plot.Y.Min != -4 || f.plot.Y.Max != 4 {
		t.Errorf("axes [%v, %v] × [%v, %v], want [1e-7, ≥1e9] × [-4, 4]", f.plot.X.Min, f.plot.X.Max, f.plot.Y.Min, f.plot.Y.Max)
	}
}

// A curve whose every finite point is non-positive on a log axis is an error naming it, and WriteFile then leaves
// no file; a curve of NaNs only is a gap, as on linear axes.
func TestLogErrors(t *testing.T) {
	good := Curve{Name: "ok", X: []float64{1, 2}, Y: []float64{1, 2}}
	var buf bytes.Buffer
	c := Chart{LogY: true, Curves: []Curve{good, {Name: "VBEM", X: []float64{1, 2}, Y: []float64{0, -1}}}}
	if err := c.Write(&buf); err == nil || !strings.Contains(err.Error(), "VBEM") {
		t.Errorf("all-non-positive curve: err = %v", err)
	}
	if buf.Len() != 0 {
		t.Errorf("wrote %d bytes on error", buf.Len())
	}
	path := filepath.Join(t.TempDir(), "bad.svg")
	if err := c.WriteFile(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("WriteFile: err = %v, want one naming %s", err, path)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("WriteFile left a file behind (stat: %v)", err)
	}
	c = Chart{LogX: true, Curves: []Curve{{Name: "neg", X: []float64{-1, 0}, Y: []float64{1, 2}}}}
	if err := c.Write(&buf); err == nil {
		t.Error("only curve all non-positive on the log x axis: no error")
	}
	c = Chart{LogY: true, Curves: []Curve{good, {Name: "gap", X: []float64{1}, Y: []float64{math.NaN()}}}}
	if err := c.Write(&buf); err != nil {
		t.Errorf("NaN-only curve on a log axis: %v", err)
	}
}

// A curve's own colour is used for its line and legend, thin curves are drawn narrow and translucent with an
// opaque legend line, and curves sharing a name are named once in the legend, in the first one's colour.
func TestColorThinLegend(t *testing.T) {
	c := Chart{Curves: []Curve{
		{Name: "RCG", Color: "#d62728", Thin: true, X: []float64{0, 1}, Y: []float64{0, 1}},
		{Name: "RCG", Color: "#1f77b4", Thin: true, X: []float64{0, 1}, Y: []float64{1, 0}},
		{Name: "VBEM", X: []float64{0, 1}, Y: []float64{0.5, 0.5}},
		{X: []float64{0, 1}, Y: []float64{0.2, 0.3}},
	}}
	els := render(t, &c)
	var thin, thick []element
	for _, e := range els {
		if e.name != "path" || e.style["stroke"] == "" || e.style["stroke"] == "none" {
			continue
		}
		switch e.style["stroke-width"] {
		case width(thinWidth):
			thin = append(thin, e)
		case width(lineWidth):
			thick = append(thick, e)
		}
	}
	// The writer un-premultiplies a translucent colour with truncation, so a channel may be one less.
	near := func(got, want string) bool {
		var g, w [3]int
		fmt.Sscanf(strings.ToLower(got), "#%02x%02x%02x", &g[0], &g[1], &g[2])
		fmt.Sscanf(want, "#%02x%02x%02x", &w[0], &w[1], &w[2])
		for i := range g {
			if g[i] > w[i] || g[i] < w[i]-1 {
				return false
			}
		}
		return true
	}
	if len(thin) != 2 || !near(thin[0].style["stroke"], "#d62728") || !near(thin[1].style["stroke"], "#1f77b4") {
		t.Errorf("thin strokes %v", thin)
	}
	for _, e := range thin {
		if o, err := strconv.ParseFloat(e.style["stroke-opacity"], 64); err != nil || math.Abs(o-thinAlpha) > 0.01 {
			t.Errorf("thin stroke-opacity %q, want %v", e.style["stroke-opacity"], thinAlpha)
		}
	}
	if len(thick) != 2 || !strings.EqualFold(thick[0].style["stroke"], palette[2]) || !strings.EqualFold(thick[1].style["stroke"], palette[3]) {
		t.Errorf("opaque strokes %v, want palette colours %s, %s", thick, palette[2], palette[3])
	}
	for _, e := range thick {
		if _, ok := e.style["stroke-opacity"]; ok {
			t.Errorf("opaque curve has stroke-opacity %q", e.style["stroke-opacity"])
		}
	}
	sw := width(swatchWidth)
	if len(lines(els, "#d62728", sw)) != 1 || len(lines(els, palette[2], sw)) != 1 || len(lines(els, "#1f77b4", sw)) != 0 ||
		len(lines(els, palette[3], sw)) != 0 {
		t.Errorf("legend lines wrong: want one for RCG in its first colour, one for VBEM, none for the unnamed curve")
	}
	if n := texts(els); n["RCG"] != 1 || n["VBEM"] != 1 || n[""] != 0 {
		t.Errorf("legend names %v", n)
	}
}

// dirNames lists a directory.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// WriteFile writes what Write does, readable by all, replaces an old file whole, and on any failure leaves the
// target as it was, no temporary file behind, and an error naming the file.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "fig.svg")
	c := Chart{Title: "one", Curves: []Curve{{Name: "a", X: []float64{0, 1}, Y: []float64{0, 1}}}}
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := c.Write(&want); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Errorf("file differs from Write's output (err %v)", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v (err %v), want 0644", fi.Mode(), err)
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("directory holds %v, want only fig.svg", names)
	}

	// A chart that cannot be drawn leaves the old file untouched.
	bad := Chart{Curves: []Curve{{Name: "nan", X: []float64{math.NaN()}, Y: []float64{1}}}}
	if err := bad.WriteFile(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("undrawable chart: err = %v, want one naming %s", err, path)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, got) {
		t.Error("failed WriteFile changed the file")
	}

	// A directory that does not exist, and a target that is a directory: errors naming the path, nothing left.
	for _, p := range []string{filepath.Join(dir, "missing", "fig.svg"), filepath.Join(dir, "sub")} {
		if p == filepath.Join(dir, "sub") {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.WriteFile(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("WriteFile(%s): err = %v, want one naming the path", p, err)
		}
	}
	if names := dirNames(t, dir); len(names) != 2 {
		t.Errorf("directory holds %v, want fig.svg and sub", names)
	}
	if names := dirNames(t, filepath.Join(dir, "sub")); len(names) != 0 {
		t.Errorf("target directory holds %v", names)
	}
}
