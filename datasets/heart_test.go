package datasets_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/internal/datatest"
)

func TestReadHeartFile(t *testing.T) {
	p := datatest.Require(t, "heart", "heart.dat")
	tab, err := datasets.ReadHeartFile(p)
	if err != nil {
		t.Fatal(err)
	}
	n2 := 0
	for _, r := range tab.Rows {
		if r[13] == 2 {
			n2++
		}
	}
	if len(tab.Rows) != 270 || n2 != 120 || len(tab.Names) != 14 {
		t.Fatalf("%d rows (%d class 2), %d names; want 270 (120), 14", len(tab.Rows), n2, len(tab.Names))
	}
}

func TestReadHeartErrors(t *testing.T) {
	row := "70.0 1.0 4.0 130.0 322.0 0.0 2.0 109.0 0.0 2.4 2.0 3.0 3.0 2\n"
	for _, c := range []struct {
		in        string
		line, col int
	}{
		{"", 1, 0},
		{row + "70.0 1.0 4.0 130.0 ? 0.0 2.0 109.0 0.0 2.4 2.0 3.0 3.0 2\n", 2, 20},
		{row + "70.0 1.0 4.0\n", 2, 1},
		{"70.0 1.0 4.0 130.0 322.0 0.0 2.0 109.0 0.0 2.4 2.0 3.0 3.0 3\n", 1, 60},
	} {
		_, err := datasets.ReadHeart(strings.NewReader(c.in), "h")
		var pe *datasets.ParseError
		if !errors.As(err, &pe) || pe.Line != c.line || pe.Column != c.col || !errors.Is(err, datasets.ErrFormat) {
			t.Errorf("%q: got %v, want h:%d:%d", c.in, err, c.line, c.col)
		}
	}
}

func FuzzReadHeart(f *testing.F) {
	f.Add("age a b c d e f g h i j k l Class\n70.0 1.0 4.0 130.0 322.0 0.0 2.0 109.0 0.0 2.4 2.0 3.0 3.0 2\n")
	f.Add("1 2 3\n")
	f.Fuzz(func(t *testing.T, s string) {
		tab, err := datasets.ReadHeart(strings.NewReader(s), "f")
		if err != nil {
			var pe *datasets.ParseError
			if !errors.As(err, &pe) || pe.Line < 1 {
				t.Fatalf("error %v is not a positioned *ParseError", err)
			}
			return
		}
		for _, r := range tab.Rows {
			if len(r) != datasets.HeartCols || (r[13] != 1 && r[13] != 2) {
				t.Fatalf("bad row %v", r)
			}
		}
	})
}
