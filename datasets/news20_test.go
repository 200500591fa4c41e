package datasets_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/internal/datatest"
)

func TestReadNews20Data(t *testing.T) {
	for _, c := range []struct {
		file      string
		docs, nnz int
		labs      [3]int
	}{{"diff.train.tfidf1.data", 1666, 117442, [3]int{593, 593, 480}},
		{"diff.test.tfidf1.data", 1107, 79379, [3]int{397, 392, 318}}} {
		path := datatest.Require(t, "20news-diff", c.file)
		corp, err := datasets.ReadNews20File(path)
		if err != nil {
			t.Fatal(err)
		}
		if corp.V != 5000 || corp.Docs() != c.docs || len(corp.Idx) != c.nnz || corp.Labels != 3 {
			t.Errorf("%s: V %d, %d docs, %d nnz, %d labels", c.file, corp.V, corp.Docs(), len(corp.Idx), corp.Labels)
		}
		var labs [3]int
		worst := 0.0
		for d := 0; d < corp.Docs(); d++ {
			labs[corp.Label[d]-1]++
			_, v := corp.Doc(d)
			s := 0.0
			for _, x := range v {
				s += x * x
			}
			worst = math.Max(worst, math.Abs(math.Sqrt(s)-1))
		}
		if labs != c.labs {
			t.Errorf("%s: label counts %v, want %v", c.file, labs, c.labs)
		}
		if worst > 1e-10 { // the documents are unit vectors
			t.Errorf("%s: a document norm is off 1 by %.3g", c.file, worst)
		}
	}
}

func TestReadNews20Bad(t *testing.T) {
	for _, c := range []struct {
		name, text string
		line, col  int
	}{
		{"empty", "", 1, 0},
		{"header", "5000\n", 1, 1},
		{"V", "x 1\n", 1, 1},
		{"idrange", "10 1\n2 1 3:0.5 10:0.5\n", 2, 11},
		{"idorder", "10 1\n2 1 3:0.5 3:0.5\n", 2, 11},
		{"nan", "10 1\n1 1 3:NaN\n", 2, 7},
		{"inf", "10 1\n1 1 3:+Inf\n", 2, 7},
		{"emptydoc", "10 1\n0 1\n", 2, 1},
		{"count", "10 1\n2 1 3:0.5\n", 2, 1},
		{"short", "10 2\n1 1 3:1\n", 3, 0},
		{"pair", "10 1\n1 1 3=1\n", 2, 5},
		{"trailer", "10 1\n1 1 3:1\n3\n4\n", 4, 1},
		{"neg", "10 1\n1 1 -3:1\n", 2, 5},
	} {
		_, err := datasets.ReadNews20(strings.NewReader(c.text), "f.data")
		var pe *datasets.ParseError
		if !errors.As(err, &pe) || !errors.Is(err, datasets.ErrFormat) {
			t.Errorf("%s: %v, want a *ParseError", c.name, err)
			continue
		}
		if pe.File != "f.data" || pe.Line != c.line || pe.Column != c.col {
			t.Errorf("%s: at %s:%d:%d, want line %d col %d (%v)", c.name, pe.File, pe.Line, pe.Column, c.line, c.col, err)
		}
	}
	corp, err := datasets.ReadNews20(strings.NewReader("10 2\n2 1 0:0.6 9:0.8\n1 3 4:1\n3\n"), "ok")
	if err != nil || corp.Docs() != 2 || corp.Ptr[2] != 3 || corp.Idx[1] != 9 || corp.Val[2] != 1 || corp.Label[1] != 3 {
		t.Fatalf("good file: %+v, %v", corp, err)
	}
}

func FuzzReadNews20(f *testing.F) {
	f.Add([]byte("10 2\n2 1 0:0.6 9:0.8\n1 3 4:1\n3\n"))
	f.Add([]byte("5 1\n1 2 4:1e-3\n"))
	f.Add([]byte("3 1\n1 1 2:1e400\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := datasets.ReadNews20(strings.NewReader(string(data)), "fuzz")
		if err != nil {
			var pe *datasets.ParseError
			if !errors.As(err, &pe) || pe.File != "fuzz" || pe.Line < 1 {
				t.Fatalf("error is not a located *ParseError: %v", err)
			}
			return
		}
		for d := 0; d < c.Docs(); d++ {
			ids, vals := c.Doc(d)
			if len(ids) == 0 {
				t.Fatal("empty document accepted")
			}
			for i, id := range ids {
				if id < 0 || int(id) >= c.V || (i > 0 && id <= ids[i-1]) || math.IsNaN(vals[i]) || math.IsInf(vals[i], 0) {
					t.Fatalf("bad entry accepted: %d %v", id, vals[i])
				}
			}
		}
	})
}
