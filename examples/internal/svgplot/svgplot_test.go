package svgplot

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
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
