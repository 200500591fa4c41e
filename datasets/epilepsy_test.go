package datasets_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/internal/datatest"
)

func TestReadEpilepsyFile(t *testing.T) {
	p := datatest.Require(t, "epilepsy", "epilepsy.csv")
	g, err := datasets.ReadEpilepsyFile(p)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, r := range g.Rows {
		sum += r[6]
	}
	// 59 patients × 4 visits; Σy equals the sum of Ysum in the raw data_epilepsy.txt (1950).
	if g.NumGroups != 59 || len(g.Rows) != 236 || sum != 1950 || g.Group[235] != 58 {
		t.Fatalf("%d groups, %d rows, Σy = %v; want 59, 236, 1950", g.NumGroups, len(g.Rows), sum)
	}
}

const epiHead = `"intercept","base","treatment","base x treatment","age","visit","y"` + "\n"

func epiPatient(base, trt, age string, ys ...string) string {
	var b strings.Builder
	for k, v := range []string{"-0.3", "-0.1", "0.1", "0.3"} {
		bt := "0"
		if trt == "1" {
			bt = base
		}
		b.WriteString("1," + base + "," + trt + "," + bt + "," + age + "," + v + "," + ys[k] + "\n")
	}
	return b.String()
}

func TestReadEpilepsyErrors(t *testing.T) {
	ok := epiPatient("1.5", "1", "0.1", "5", "3", "3", "3")
	if _, err := datasets.ReadEpilepsy(strings.NewReader(epiHead+ok), "e"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in        string
		line, col int
	}{
		{"", 1, 0},
		{epiHead, 2, 0},
		{epiHead + epiPatient("1.5", "1", "0.1", "5", "NA", "3", "3"), 3, 22},                  // missing value
		{epiHead + epiPatient("1.5", "1", "0.1", "5", "3", "2.5", "3"), 4, 21},                 // non-count
		{epiHead + epiPatient("1.5", "1", "0.1", "5", "3", "-1", "3"), 4, 21},                  // negative count
		{epiHead + strings.Replace(ok, "1,1.5,1,1.5,0.1,0.1", "1,1.6,1,1.6,0.1,0.1", 1), 4, 3}, // patient changes
		{epiHead + ok + "1,2,0,0,0,0.1,4\n", 6, 11},                                            // visit order
		{epiHead + ok[:strings.Index(ok, "\n")+1], 2, 0},                                       // incomplete patient
		{epiHead + "1,2,0,0,0\n", 2, 0},
		{epiHead + "1,2,1,3,0,-0.3,4\n", 2, 7},
	} {
		_, err := datasets.ReadEpilepsy(strings.NewReader(c.in), "e")
		var pe *datasets.ParseError
		if !errors.As(err, &pe) || pe.File != "e" || pe.Line != c.line || pe.Column != c.col || !errors.Is(err, datasets.ErrFormat) {
			t.Errorf("%q: got %v, want e:%d:%d", c.in, err, c.line, c.col)
		}
	}
}

func FuzzReadEpilepsy(f *testing.F) {
	f.Add(epiHead + epiPatient("1.5", "1", "0.1", "5", "3", "3", "3"))
	f.Add(epiHead + "1,2,0,0,0,-0.3,4\n")
	f.Add("1,2\n\"")
	f.Fuzz(func(t *testing.T, s string) {
		g, err := datasets.ReadEpilepsy(strings.NewReader(s), "f")
		if err != nil {
			var pe *datasets.ParseError
			if !errors.As(err, &pe) || pe.Line < 1 || pe.File != "f" {
				t.Fatalf("error %v is not a positioned *ParseError", err)
			}
			return
		}
		if len(g.Rows) != 4*g.NumGroups || len(g.Group) != len(g.Rows) {
			t.Fatalf("%d rows for %d groups", len(g.Rows), g.NumGroups)
		}
		for i, r := range g.Rows {
			if g.Group[i] != i/4 || r[6] < 0 || r[6] != float64(int64(r[6])) {
				t.Fatalf("row %d: %v group %d", i, r, g.Group[i])
			}
		}
	})
}
