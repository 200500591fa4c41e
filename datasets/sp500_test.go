package datasets_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/internal/datatest"
)

func TestReadSP500File(t *testing.T) {
	y, err := datasets.ReadSP500File(datatest.Require(t, "sp500", "SP500_weekly_y.csv"))
	if err != nil {
		t.Fatal(err)
	}
	// The data README: 1612 values, mean about 0, s.d. 2.229, min −20.23, max 11.21.
	if len(y) != 1612 {
		t.Fatalf("%d returns, want 1612", len(y))
	}
	var m, s2, lo, hi float64
	for _, v := range y {
		m += v / float64(len(y))
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	for _, v := range y {
		s2 += (v - m) * (v - m) / float64(len(y)-1)
	}
	if math.Abs(m) > 1e-6 || math.Abs(math.Sqrt(s2)-2.229) > 5e-3 || math.Abs(lo+20.23) > 5e-3 || math.Abs(hi-11.21) > 5e-3 {
		t.Fatalf("mean %v sd %v min %v max %v", m, math.Sqrt(s2), lo, hi)
	}
}

func TestReadSP500Errors(t *testing.T) {
	for _, c := range []struct {
		in        string
		line, col int
	}{
		{"y\n1.5\nabc\n", 3, 1},
		{"y\n1.5\n  NaN\n", 3, 3},
		{"y\n1,2\n", 2, 2},
		{"1\nInf\n", 2, 1},
		{"y\n\n", 1, 0},
		{"", 1, 0},
	} {
		_, err := datasets.ReadSP500(strings.NewReader(c.in), "f.csv")
		var pe *datasets.ParseError
		if !errors.As(err, &pe) || pe.File != "f.csv" || pe.Line != c.line || pe.Column != c.col {
			t.Errorf("%q: %v, want f.csv:%d:%d", c.in, err, c.line, c.col)
		}
	}
	y, err := datasets.ReadSP500(strings.NewReader("y\r\n1.5\r\n\r\n-2e-1\r\n"), "ok")
	if err != nil || len(y) != 2 || y[1] != -0.2 {
		t.Fatalf("%v %v", y, err)
	}
}

func FuzzReadSP500(f *testing.F) {
	f.Add([]byte("y\n1.5\n-2\n"))
	f.Add([]byte("y\r\n3.3\r\n"))
	f.Add([]byte("1,2\nx"))
	f.Fuzz(func(t *testing.T, data []byte) {
		y, err := datasets.ReadSP500(strings.NewReader(string(data)), "fuzz")
		if err != nil {
			var pe *datasets.ParseError
			if !errors.As(err, &pe) || pe.File != "fuzz" || pe.Line < 1 || pe.Column < 0 || !errors.Is(err, datasets.ErrFormat) {
				t.Fatalf("error %v is not a located *ParseError", err)
			}
			return
		}
		if len(y) == 0 {
			t.Fatal("no values and no error")
		}
		for _, v := range y {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("non-finite %v accepted", v)
			}
		}
	})
}
