package datasets_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/internal/datatest"
)

func TestReadICUFile(t *testing.T) {
	p := datatest.Require(t, "icu", "icu.csv")
	tab, err := datasets.ReadICUFile(p)
	if err != nil {
		t.Fatal(err)
	}
	died := 0
	for _, r := range tab.Rows {
		died += int(r[1])
	}
	if len(tab.Rows) != 200 || died != 40 {
		t.Fatalf("%d rows, %d died; want 200, 40", len(tab.Rows), died)
	}
}

const icuHead = `"ID","STA","AGE","SEX","RACE","SER","CAN","CRN","INF","CPR","SYS","HRA","PRE","TYP","FRA","PO2","PH","PCO","BIC","CRE","LOC"` + "\n"

func TestReadICUErrors(t *testing.T) {
	for _, c := range []struct {
		in        string
		line, col int
	}{
		{icuHead + "552,0,16,0,1,1,0,0,0,0,100,140,0,1,1,0,0,0,0,0,3\n", 2, 48},
		{icuHead + "552,0,16,0,1,1,0,0,0,0,100,,0,1,1,0,0,0,0,0,0\n", 2, 28},
		{icuHead + "552,2,16,0,1,1,0,0,0,0,100,140,0,1,1,0,0,0,0,0,0\n", 2, 5},
		{icuHead + "552,0,16\n", 2, 10},
		{`"ID","STA"` + "\n", 1, 0},
		{icuHead, 1, 0},
	} {
		_, err := datasets.ReadICU(strings.NewReader(c.in), "icu")
		var pe *datasets.ParseError
		if !errors.As(err, &pe) || pe.Line != c.line || pe.Column != c.col {
			t.Errorf("%q: got %v, want icu:%d:%d", c.in[len(c.in)-20:], err, c.line, c.col)
		}
	}
}

func FuzzReadICU(f *testing.F) {
	f.Add(icuHead + "552,0,16,0,1,1,0,0,0,0,100,140,0,1,1,0,0,0,0,0,0\n")
	f.Fuzz(func(t *testing.T, s string) {
		tab, err := datasets.ReadICU(strings.NewReader(s), "f")
		if err != nil {
			var pe *datasets.ParseError
			if !errors.As(err, &pe) || pe.Line < 1 {
				t.Fatalf("error %v is not a positioned *ParseError", err)
			}
			return
		}
		for _, r := range tab.Rows {
			if len(r) != len(datasets.ICUNames) {
				t.Fatalf("row of %d", len(r))
			}
		}
	})
}
