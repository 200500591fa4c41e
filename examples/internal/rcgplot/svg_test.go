package rcgplot

import (
	"math"
	"strings"
	"testing"
)

func TestWriteSVG(t *testing.T) {
	p := Plot{Title: "a<b", LogX: true, Series: []Series{{Name: "RCG", Color: "red", X: []float64{0.1, 1, 10, -1}, Y: []float64{3, 2, 1, math.NaN()}}}}
	var b strings.Builder
	if err := p.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	if !strings.HasPrefix(s, "<svg") || !strings.Contains(s, "a&lt;b") || strings.Count(s, "<polyline") != 1 {
		t.Errorf("unexpected SVG:\n%s", s)
	}
	// Three valid points (the negative x on a log axis and the NaN are skipped); the first maps to the left edge.
	if !strings.Contains(s, `points="70.0,`) || strings.Count(strings.Split(strings.Split(s, `points="`)[1], `"`)[0], ",") != 3 {
		t.Errorf("points: %s", s)
	}
}
