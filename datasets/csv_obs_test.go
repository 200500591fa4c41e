package datasets

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestReadObservations(t *testing.T) {
	in := "# comment\ny,x1,x2\n1, 0.5,-2\n\n0,3e-1,4\r\n"
	o, err := ReadObservations(strings.NewReader(in), "a.csv")
	if err != nil {
		t.Fatal(err)
	}
	if o.N != 2 || o.D != 2 || !reflect.DeepEqual(o.Y, []float64{1, 0}) || !reflect.DeepEqual(o.X, []float64{0.5, -2, 0.3, 4}) {
		t.Fatalf("got %+v", o)
	}
	if o2, err := ReadObservations(strings.NewReader("2,1,1"), "b.csv"); err != nil || o2.N != 1 || o2.D != 2 {
		t.Fatalf("no header, no final newline: %+v %v", o2, err)
	}
	for _, c := range []struct{ in, want string }{
		{"1,2,3\n1,2\n", "f.csv:2: 1 inputs, want 2"},
		{"1,2,3\n1,x,3\n", "f.csv:2:3: field 2 \"x\": not a number"},
		{"1,2,NaN\n", "f.csv:1:5: field 3 \"NaN\": not a finite number"},
		{"1,2,1e999\n", "f.csv:1:5: field 3 \"1e999\": value out of float64 range"},
		{"1,,3\n", "f.csv:1:3: field 2 \"\": empty value"},
		{"1\n", "f.csv:1: 1 field"},
		{"# only\n", "f.csv:1: no observations"},
		{"y,a\n", "f.csv:1: no observations"},
	} {
		_, err := ReadObservations(strings.NewReader(c.in), "f.csv")
		var pe *ParseError
		if !errors.As(err, &pe) || !errors.Is(err, ErrFormat) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: error %v, want prefix %q", c.in, err, c.want)
		}
	}
}

// FuzzReadObservations: any input gives observations of consistent shape or a *ParseError, never a panic.
func FuzzReadObservations(f *testing.F) {
	for _, s := range []string{"y,x\n1,2\n", "1,2,3\n4,5,6", "#\n\n", "a,b\n1,x", "1,1e400", ",,,\n", "1,2\r\n3,4\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ReadObservations(strings.NewReader(s), "fuzz.csv")
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line < 1 || pe.Column < 0 {
				t.Fatalf("error %v (%T) is not a positioned *ParseError", err, err)
			}
			return
		}
		if o.N < 1 || o.D < 1 || len(o.Y) != o.N || len(o.X) != o.N*o.D {
			t.Fatalf("inconsistent observations: N=%d D=%d len(Y)=%d len(X)=%d", o.N, o.D, len(o.Y), len(o.X))
		}
	})
}
