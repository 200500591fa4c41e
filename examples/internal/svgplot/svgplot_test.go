package svgplot

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The output is well-formed XML; each curve is one polyline (split at a NaN) whose points map the data linearly
// into the plot box; the legend names every curve (escaped).
func TestWrite(t *testing.T) {
	c := Chart{Title: "a < b", XLabel: "time (s)", YLabel: "log-perplexity", Curves: []Curve{
		{Name: "gSGNHT", X: []float64{0, 10, 20}, Y: []float64{5000, 3000, 2500}},
		{Name: "S&GGMC", X: []float64{0, 10, math.NaN(), 30}, Y: []float64{5000, 4500, 1, 4200}},
	}}
	var buf bytes.Buffer
	if err := c.Write(&buf); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	var polys [][][2]float64
	var texts []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, buf.String())
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if e.Name.Local == "polyline" {
				for _, a := range e.Attr {
					if a.Name.Local == "points" {
						var pts [][2]float64
						for _, f := range strings.Fields(a.Value) {
							xy := strings.Split(f, ",")
							x, _ := strconv.ParseFloat(xy[0], 64)
							y, _ := strconv.ParseFloat(xy[1], 64)
							pts = append(pts, [2]float64{x, y})
						}
						polys = append(polys, pts)
					}
				}
			}
		case xml.CharData:
			texts = append(texts, string(e))
		}
	}
	if len(polys) != 3 || len(polys[0]) != 3 || len(polys[1]) != 2 || len(polys[2]) != 1 {
		t.Fatalf("polylines %v", polys)
	}
	// Linear map: equal x steps give equal pixel steps; a larger y is drawn higher (smaller pixel y).
	p := polys[0]
	if math.Abs((p[1][0]-p[0][0])-(p[2][0]-p[1][0])) > 0.02 || !(p[1][1] > p[0][1]) {
		t.Errorf("points not mapped linearly: %v", p)
	}
	// Pixel gaps are proportional to data gaps.
	r1 := (p[1][1] - p[0][1]) / 2000
	r2 := (p[2][1] - p[1][1]) / 500
	if math.Abs(r1-r2) > 1e-3 {
		t.Errorf("y scale not linear: %v vs %v", r1, r2)
	}
	all := strings.Join(texts, "|")
	for _, want := range []string{"gSGNHT", "S&GGMC", "a < b", "log-perplexity"} {
		if !strings.Contains(all, want) {
			t.Errorf("text %q missing", want)
		}
	}
}

func TestErrors(t *testing.T) {
	var buf bytes.Buffer
	if err := (&Chart{Curves: []Curve{{X: []float64{1}, Y: []float64{math.NaN()}}}}).Write(&buf); err == nil {
		t.Error("no finite points: no error")
	}
	if err := (&Chart{Curves: []Curve{{X: []float64{1, 2}, Y: []float64{1}}}}).Write(&buf); err == nil {
		t.Error("length mismatch: no error")
	}
}

func TestNiceStep(t *testing.T) {
	for _, c := range []struct{ span, want float64 }{{10, 2}, {7, 2}, {0.3, 0.05}, {4500, 1000}, {1, 0.2}} {
		if got := niceStep(c.span, 6); math.Abs(got-c.want) > 1e-12*c.want {
			t.Errorf("niceStep(%v) = %v, want %v", c.span, got, c.want)
		}
	}
}

// element is one parsed SVG element: its name, attributes and text.
type element struct {
	name  string
	attr  map[string]string
	text  string
	point [][2]float64 // a polyline's points
}

// parse decodes the SVG as XML, failing the test on malformed output.
func parse(t *testing.T, svg []byte) []element {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var els []element
	cur := -1 // the element whose text is being read; -1 between elements
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return els
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			el := element{name: e.Name.Local, attr: map[string]string{}}
			for _, a := range e.Attr {
				el.attr[a.Name.Local] = a.Value
			}
			for _, f := range strings.Fields(el.attr["points"]) {
				xy := strings.Split(f, ",")
				x, _ := strconv.ParseFloat(xy[0], 64)
				y, _ := strconv.ParseFloat(xy[1], 64)
				el.point = append(el.point, [2]float64{x, y})
			}
			els = append(els, el)
			cur = len(els) - 1
		case xml.EndElement:
			cur = -1
		case xml.CharData:
			if cur >= 0 {
				els[cur].text += string(e)
			}
		}
	}
}

// ticks returns the numeric labels of the x axis (centred under the box) and of the y axis (right-aligned left
// of it), with their pixel positions.
func ticks(els []element) (x, y map[float64]float64) {
	x, y = map[float64]float64{}, map[float64]float64{}
	for _, e := range els {
		v, err := strconv.ParseFloat(e.text, 64)
		if e.name != "text" || err != nil {
			continue
		}
		switch e.attr["text-anchor"] {
		case "middle":
			x[v], _ = strconv.ParseFloat(e.attr["x"], 64)
		case "end":
			y[v], _ = strconv.ParseFloat(e.attr["y"], 64)
		}
	}
	return x, y
}

func isPow10(v float64) bool {
	k := math.Round(math.Log10(v))
	return v > 0 && math.Abs(v/math.Pow(10, k)-1) < 1e-12
}

// On log axes the ticks are whole decades around the data, each decade gets the same length, and points with a
// non-positive coordinate are skipped like NaN (breaking the line).
func TestLogAxes(t *testing.T) {
	c := Chart{LogX: true, LogY: true, Curves: []Curve{
		{Name: "RCG", X: []float64{0.5, 5, -1, 50, 500, 5000}, Y: []float64{2, 20, 3, 200, 2000, 0}},
	}}
	var buf bytes.Buffer
	if err := c.Write(&buf); err != nil {
		t.Fatal(err)
	}
	els := parse(t, buf.Bytes())
	var polys [][][2]float64
	for _, e := range els {
		if e.name == "polyline" {
			polys = append(polys, e.point)
		}
	}
	if len(polys) != 2 || len(polys[0]) != 2 || len(polys[1]) != 2 {
		t.Fatalf("polylines %v, want two of two points (x = -1 and y = 0 skipped)", polys)
	}
	xt, yt := ticks(els)
	for _, c := range []struct {
		got  map[float64]float64
		want []float64
	}{{xt, []float64{0.1, 1, 10, 100, 1000}}, {yt, []float64{1, 10, 100, 1000, 10000}}} {
		if len(c.got) != len(c.want) {
			t.Errorf("ticks %v, want %v", c.got, c.want)
		}
		for _, v := range c.want {
			if _, ok := c.got[v]; !ok {
				t.Errorf("tick %v missing from %v", v, c.got)
			}
		}
	}
	// One decade of data spans the pixels of one decade of ticks, on both axes.
	dx, dy := xt[10]-xt[1], yt[10]-yt[1]
	for _, seg := range polys {
		if math.Abs((seg[1][0]-seg[0][0])-dx) > 0.1 || math.Abs((seg[1][1]-seg[0][1])-dy) > 0.1 {
			t.Errorf("segment %v does not span one decade (%v, %v pixels)", seg, dx, dy)
		}
	}
}

// Data over many decades gets at most about eight ticks, all still powers of ten; a linear y next to a log x keeps
// its negative values.
func TestLogTicksThinned(t *testing.T) {
	c := Chart{LogX: true, Curves: []Curve{{Name: "a", X: []float64{1e-7, 1e9}, Y: []float64{-3, 4}}}}
	var buf bytes.Buffer
	if err := c.Write(&buf); err != nil {
		t.Fatal(err)
	}
	xt, yt := ticks(parse(t, buf.Bytes()))
	if len(xt) < 3 || len(xt) > 9 {
		t.Errorf("%d x ticks: %v", len(xt), xt)
	}
	for v := range xt {
		if !isPow10(v) {
			t.Errorf("x tick %v is not a power of ten", v)
		}
	}
	if _, ok := yt[-4]; !ok {
		t.Errorf("linear y ticks %v do not reach below -3", yt)
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
	if err := c.WriteFile(path); err == nil {
		t.Error("WriteFile: no error")
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

// A curve's own colour is used for its line and legend, thin curves are drawn translucent, and curves sharing a
// name are named once in the legend.
func TestColorThinLegend(t *testing.T) {
	c := Chart{Curves: []Curve{
		{Name: "RCG", Color: "#d62728", Thin: true, X: []float64{0, 1}, Y: []float64{0, 1}},
		{Name: "RCG", Color: "#d62728", Thin: true, X: []float64{0, 1}, Y: []float64{1, 0}},
		{Name: "VBEM", X: []float64{0, 1}, Y: []float64{0.5, 0.5}},
	}}
	var buf bytes.Buffer
	if err := c.Write(&buf); err != nil {
		t.Fatal(err)
	}
	var strokes, opac []string
	names := map[string]int{}
	for _, e := range parse(t, buf.Bytes()) {
		switch e.name {
		case "polyline":
			strokes, opac = append(strokes, e.attr["stroke"]), append(opac, e.attr["stroke-opacity"])
		case "text":
			names[e.text]++
		}
	}
	if len(strokes) != 3 || strokes[0] != "#d62728" || strokes[1] != "#d62728" || strokes[2] != palette[2] {
		t.Errorf("strokes %v", strokes)
	}
	if opac[0] == "" || opac[1] == "" || opac[2] != "" {
		t.Errorf("stroke-opacity %q: want thin curves translucent, the other opaque", opac)
	}
	if names["RCG"] != 1 || names["VBEM"] != 1 {
		t.Errorf("legend names %v", names)
	}
}
