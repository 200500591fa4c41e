package cholnglr

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/geovb/geovb/datasets"
)

// germanRow returns a row of the categorical German credit file: the seven numeric attributes (1-based 2, 5, 8, 11,
// 13, 16, 18) are num·(j+1), attribute j's category is A<j><cat>, and the class is last.
func germanRow(num float64, cat int, class string) string {
	f := make([]string, 0, 21)
	for j := 0; j < 20; j++ {
		switch j {
		case 1, 4, 7, 10, 12, 15, 17:
			f = append(f, fmt.Sprint(num*float64(j+1)))
		default:
			f = append(f, fmt.Sprintf("A%d%d", j+1, cat))
		}
	}
	return strings.Join(append(f, class), " ")
}

// TestGermanCoding: on a three-row file the design has the intercept, the seven numeric attributes standardised
// (compared with the plain mean and sample-sd formula, 1e-14) and one 0/1 column per non-reference category of the
// 13 categorical ones (two categories each here: 13 columns), so d = 1 + 7 + 13; class 1 codes y = 1, 0 and 2 y = 0.
// Scaling the numeric values by 1e300 leaves the coding unchanged (1e-14), and a single row, or a constant column,
// is centred to zeros rather than divided by a zero sd.
func TestGermanCoding(t *testing.T) {
	nums := []float64{1, 4, 10}
	rows := []string{germanRow(nums[0], 1, "1"), germanRow(nums[1], 2, "2"), germanRow(nums[2], 1, "0")}
	m, err := German(strings.NewReader(strings.Join(rows, "\n")+"\n"), "g")
	if err != nil {
		t.Fatal(err)
	}
	if m.N != 3 || m.D != 21 || len(m.Names) != 21 {
		t.Fatalf("%d×%d design (%v), want 3×21", m.N, m.D, m.Names)
	}
	mean := (nums[0] + nums[1] + nums[2]) / 3
	ss := 0.0
	for _, v := range nums {
		ss += (v - mean) * (v - mean)
	}
	sd := math.Sqrt(ss / 2)
	for i := range 3 {
		if m.X[i*m.D] != 1 {
			t.Errorf("row %d: intercept %v", i, m.X[i*m.D])
		}
		for j := 1; j <= 7; j++ { // every numeric attribute is a multiple of nums, so standardises alike
			if got, want := m.X[i*m.D+j], (nums[i]-mean)/sd; math.Abs(got-want) > 1e-14 {
				t.Errorf("row %d, %s: %v, want %v", i, m.Names[j], got, want)
			}
		}
		for j := 8; j < m.D; j++ {
			if want := float64(i % 2); m.X[i*m.D+j] != want { // row 1 has the second category
				t.Errorf("row %d, %s: %v, want %v", i, m.Names[j], m.X[i*m.D+j], want)
			}
		}
	}
	if m.Y[0] != 1 || m.Y[1] != 0 || m.Y[2] != 0 {
		t.Errorf("classes %v, want [1 0 0]", m.Y)
	}

	big := []string{germanRow(1e300*nums[0], 1, "1"), germanRow(1e300*nums[1], 2, "2"), germanRow(1e300*nums[2], 1, "0")}
	mb, err := German(strings.NewReader(strings.Join(big, "\n")), "g")
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range mb.X {
		if math.Abs(v-m.X[i]) > 1e-14 {
			t.Fatalf("scaled by 1e300: element %d is %v, unscaled %v", i, v, m.X[i])
		}
	}

	for _, in := range []string{germanRow(7, 1, "1"), germanRow(7, 1, "1") + "\n" + germanRow(7, 2, "0")} {
		m1, err := German(strings.NewReader(in), "g")
		if err != nil {
			t.Fatal(err)
		}
		for i := range m1.N {
			for j := 1; j <= 7; j++ {
				if v := m1.X[i*m1.D+j]; v != 0 {
					t.Errorf("%d rows with a constant %s: %v, want 0", m1.N, m1.Names[j], v)
				}
			}
		}
	}
}

// TestGermanBadInput: a malformed file is a *datasets.ParseError at the line and column of the fault.
func TestGermanBadInput(t *testing.T) {
	good := germanRow(1, 1, "1")
	f := strings.Fields(good)
	with := func(j int, v string) string { // good with field j replaced
		g := append([]string(nil), f...)
		g[j] = v
		return strings.Join(g, " ")
	}
	col := func(s string, j int) int { // 1-based column of field j of s
		return len(strings.Join(strings.Fields(s)[:j], " ")) + 1 + min(j, 1)
	}
	for _, c := range []struct {
		in         string
		line, col  int
		msgContain string
	}{
		{"", 1, 0, "no data rows"},
		{"\n\n", 2, 0, "no data rows"},
		{good + "\n" + strings.Join(f[:20], " "), 2, 0, "20 fields, want 21"},
		{good + " 3", 1, 0, "22 fields"},
		{with(4, "12x"), 1, col(with(4, "12x"), 4), `attribute 5: "12x" is not a finite number`},
		{with(12, "NaN"), 1, col(with(12, "NaN"), 12), "attribute 13"},
		{with(1, "1e999"), 1, col(with(1, "1e999"), 1), "attribute 2"},
		{good + "\n" + with(20, "3"), 2, col(with(20, "3"), 20), `class "3"`},
		{with(0, "B11"), 1, 1, `attribute 1: "B11" is not a category code`},
		{with(3, "A"), 1, col(with(3, "A"), 3), "attribute 4"},
	} {
		_, err := German(strings.NewReader(c.in), "g.data")
		var pe *datasets.ParseError
		if !errors.As(err, &pe) || pe.File != "g.data" || pe.Line != c.line || pe.Column != c.col ||
			!strings.Contains(pe.Msg, c.msgContain) {
			t.Errorf("%.40q…: error %v, want g.data:%d:%d containing %q", c.in, err, c.line, c.col, c.msgContain)
		}
	}
	if _, err := GermanFile("no/such/german.data"); err == nil || !strings.Contains(err.Error(), "no/such/german.data") {
		t.Errorf("missing file: error %v, want one naming the path", err)
	}
}

// FuzzGerman: any input gives either a positioned *datasets.ParseError or a design with an intercept column, finite
// values, N rows and 0/1 classes; never a panic.
func FuzzGerman(f *testing.F) {
	f.Add(germanRow(1, 1, "1") + "\n" + germanRow(3, 2, "2") + "\n")
	f.Add("STATUS_ACCOUNT x\n" + germanRow(1e300, 3, "0"))
	f.Add(germanRow(5, 1, "1"))
	f.Add("A11 6 A34\n")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := German(strings.NewReader(s), "f")
		if err != nil {
			var pe *datasets.ParseError
			if !errors.As(err, &pe) || pe.Line < 1 {
				t.Fatalf("error %v is not a positioned *datasets.ParseError", err)
			}
			return
		}
		if m.N < 1 || len(m.X) != m.N*m.D || len(m.Y) != m.N || len(m.Names) != m.D {
			t.Fatalf("design %d×%d with %d values, %d classes, %d names", m.N, m.D, len(m.X), len(m.Y), len(m.Names))
		}
		for i, v := range m.X {
			if math.IsNaN(v) || math.IsInf(v, 0) || i%m.D == 0 && v != 1 {
				t.Fatalf("element %d (row %d, column %d) is %v", i, i/m.D, i%m.D, v)
			}
		}
		for _, y := range m.Y {
			if y != 0 && y != 1 {
				t.Fatalf("class %v", y)
			}
		}
	})
}
