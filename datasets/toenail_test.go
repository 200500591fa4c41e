package datasets_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/internal/datatest"
)

func TestReadToenailFile(t *testing.T) {
	p := datatest.Require(t, "toenail", "toenail.csv")
	g, err := datasets.ReadToenailFile(p)
	if err != nil {
		t.Fatal(err)
	}
	trt := 0
	for _, r := range g.Rows {
		trt += int(r[2])
	}
	if g.NumGroups != 294 || len(g.Rows) != 1908 || trt != 971 {
		t.Fatalf("%d groups, %d rows, %d terbinafine; want 294, 1908, 971", g.NumGroups, len(g.Rows), trt)
	}
}

const toeHead = "rownames,patientID,outcome,treatment,time,visit\n"

func TestReadToenailErrors(t *testing.T) {
	ok := `1,1,moderate or severe,terbinafine,0,1
2,1,none or mild,terbinafine,0.85,2
3,3,none or mild,itraconazole,0,1
`
	g, err := datasets.ReadToenail(strings.NewReader(toeHead+ok), "t")
	if err != nil || g.NumGroups != 2 || g.Group[2] != 1 || g.Rows[0][1] != 1 || g.Rows[2][2] != 0 {
		t.Fatalf("got %+v, %v", g, err)
	}
	for _, c := range []struct {
		in        string
		line, col int
	}{
		{"", 1, 0},
		{"a,b\n", 1, 0},
		{toeHead + ok + "4,1,none or mild,terbinafine,1,3\n", 5, 3},  // non-contiguous group
		{toeHead + "1,1,NA,terbinafine,0,1\n", 2, 5},                 // missing value
		{toeHead + "1,1,severe,terbinafine,0,1\n", 2, 5},             // not binary
		{toeHead + "1,1,none or mild,placebo,0,1\n", 2, 18},          // unknown treatment
		{toeHead + "1,x,none or mild,terbinafine,0,1\n", 2, 3},       // bad id
		{toeHead + "1,1,none or mild,terbinafine,?,1\n", 2, 30},      // missing time
		{toeHead + ok + "4,3,none or mild,terbinafine,1,2\n", 5, 18}, // treatment changes
		{toeHead + "1,1,none or mild\n", 2, 0},
	} {
		_, err := datasets.ReadToenail(strings.NewReader(c.in), "t")
		var pe *datasets.ParseError
		if !errors.As(err, &pe) || pe.File != "t" || pe.Line != c.line || pe.Column != c.col || !errors.Is(err, datasets.ErrFormat) {
			t.Errorf("%q: got %v, want t:%d:%d", c.in, err, c.line, c.col)
		}
	}
}

func FuzzReadToenail(f *testing.F) {
	f.Add(toeHead + "1,1,moderate or severe,terbinafine,0,1\n2,1,none or mild,terbinafine,0.85,2\n")
	f.Add(toeHead + "1,1,none or mild,itraconazole,0,1\n2,2,1,1,3,2\n3,1,0,1,2,1\n")
	f.Add("\"a")
	f.Fuzz(func(t *testing.T, s string) {
		g, err := datasets.ReadToenail(strings.NewReader(s), "f")
		if err != nil {
			var pe *datasets.ParseError
			if !errors.As(err, &pe) || pe.Line < 1 || pe.File != "f" {
				t.Fatalf("error %v is not a positioned *ParseError", err)
			}
			return
		}
		for i, r := range g.Rows {
			if (r[1] != 0 && r[1] != 1) || (r[2] != 0 && r[2] != 1) {
				t.Fatalf("row %d: %v", i, r)
			}
			if i > 0 && g.Group[i] != g.Group[i-1] && g.Group[i] != g.Group[i-1]+1 {
				t.Fatalf("groups not contiguous at row %d", i)
			}
		}
	})
}
