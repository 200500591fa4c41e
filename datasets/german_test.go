package datasets_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/internal/datatest"
)

func germanLine(label string) string {
	return strings.Repeat("   1", datasets.GermanCols) + "   " + label + " \r\n"
}

func TestReadGermanErrors(t *testing.T) {
	good := germanLine("1") + germanLine("2")
	if g, err := datasets.ReadGerman(strings.NewReader(good), "g"); err != nil || len(g.Y) != 2 || g.Y[0] != 1 || g.Y[1] != 0 {
		t.Fatalf("good file: %v %+v", err, g)
	}
	if g, err := datasets.ReadGerman(strings.NewReader(germanLine("0")+germanLine("1")), "g"); err != nil || g.Y[0] != 0 {
		t.Fatalf("0/1 coding: %v", err)
	}
	short := strings.Repeat("   1", datasets.GermanCols) + "\n" // 24 fields
	bad := strings.Replace(germanLine("1"), "   1", "   x", 3)
	nan := strings.Replace(germanLine("1"), "   1", " NaN", 1)
	for _, c := range []struct {
		name, data string
		line, col  int
	}{
		{"short", good + short, 3, 1},
		{"extra", good + strings.TrimRight(germanLine("1"), " \r\n") + " 7\n", 3, 102},
		{"non-numeric", good + bad, 3, 4},
		{"nan", nan, 1, 2},
		{"label 3", germanLine("3"), 1, 100},
		{"label 1.5", germanLine("1.5"), 1, 100},
		{"mixed coding", germanLine("2") + germanLine("0"), 2, 100},
		{"empty", "\n\n", 2, 0},
	} {
		_, err := datasets.ReadGerman(strings.NewReader(c.data), "f.txt")
		var pe *datasets.ParseError
		if !errors.As(err, &pe) || !errors.Is(err, datasets.ErrFormat) {
			t.Errorf("%s: error %v is not a *ParseError", c.name, err)
			continue
		}
		if pe.File != "f.txt" || pe.Line != c.line || pe.Column != c.col {
			t.Errorf("%s: at %s:%d:%d, want line %d column %d (%v)", c.name, pe.File, pe.Line, pe.Column, c.line, c.col, err)
		}
	}
}

func TestReadGermanFile(t *testing.T) {
	p := datatest.Require(t, "german-credit", "germancredit_numeric.txt")
	g, err := datasets.ReadGermanFile(p)
	if err != nil {
		t.Fatal(err)
	}
	good := 0.0
	for _, y := range g.Y {
		good += y
	}
	// ../shared/data/README.md: 1000 rows, 700 good and 300 bad.
	if len(g.Y) != 1000 || good != 700 {
		t.Fatalf("%d rows, %v good; want 1000 and 700", len(g.Y), good)
	}
	x, n, d := g.GermanDesign(true)
	if n != 1000 || d != 25 {
		t.Fatalf("design %d×%d", n, d)
	}
	// z-scored columns: mean 0, sample sd 1; intercept 1; indicator columns 0/1.
	for j := 1; j <= 15; j++ {
		m, ss := 0.0, 0.0
		for i := 0; i < n; i++ {
			m += x[i*d+j]
		}
		m /= float64(n)
		for i := 0; i < n; i++ {
			ss += (x[i*d+j] - m) * (x[i*d+j] - m)
		}
		if math.Abs(m) > 1e-12 || math.Abs(ss/float64(n-1)-1) > 1e-12 {
			t.Fatalf("column %d: mean %g var %g", j, m, ss/float64(n-1))
		}
	}
	for i := 0; i < n; i++ {
		if x[i*d] != 1 {
			t.Fatal("intercept")
		}
		for j := 16; j < d; j++ {
			if v := x[i*d+j]; v != 0 && v != 1 {
				t.Fatalf("indicator column %d row %d = %v", j, i, v)
			}
		}
	}
}

func FuzzReadGerman(f *testing.F) {
	f.Add([]byte(germanLine("1") + germanLine("2")))
	f.Add([]byte(germanLine("0")))
	f.Add([]byte(strings.Repeat(" 1e308", datasets.GermanCols) + " 1\n"))
	f.Add([]byte(strings.Repeat(" 1", datasets.GermanCols+3) + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := datasets.ReadGerman(strings.NewReader(string(data)), "fuzz")
		if err != nil {
			var pe *datasets.ParseError
			if !errors.As(err, &pe) || pe.File != "fuzz" || pe.Line < 1 || pe.Column < 0 {
				t.Fatalf("error is not a located *ParseError: %v", err)
			}
			return
		}
		if len(g.X) != len(g.Y) || len(g.Y) == 0 {
			t.Fatal("row count mismatch")
		}
		for i, row := range g.X {
			if len(row) != datasets.GermanCols || (g.Y[i] != 0 && g.Y[i] != 1) {
				t.Fatalf("row %d accepted with %d columns, label %v", i, len(row), g.Y[i])
			}
			for _, v := range row {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatal("non-finite value accepted")
				}
			}
		}
	})
}
