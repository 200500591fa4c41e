package datasets_test

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/internal/datatest"
)

func TestReadLIBSVM(t *testing.T) {
	o, err := datasets.ReadLIBSVM(strings.NewReader("+1 1:0.5 3:-1 \n\n-1 2:2\n"), "a.svm", 0)
	if err != nil {
		t.Fatal(err)
	}
	if o.N != 2 || o.D != 3 || !reflect.DeepEqual(o.Y, []float64{1, -1}) || !reflect.DeepEqual(o.X, []float64{0.5, 0, -1, 0, 2, 0}) {
		t.Fatalf("got %+v", o)
	}
	for _, c := range []struct {
		in   string
		d    int
		want string
	}{
		{"1 2:1 2:3\n", 0, "f:1:7: index 2 after 2"},
		{"1 0:1\n", 0, "f:1:3: index \"0\""},
		{"1 4:1\n", 3, "f:1:3: index 4 > 3"},
		{"x 1:1\n", 0, "f:1:1: label \"x\""},
		{"1 1:1\n1 2\n", 0, "f:2:3: \"2\": want index:value"},
		{"1 1:abc\n", 0, "f:1:5: value \"abc\""},
		{"\n\n", 0, "f:2: no observations"},
	} {
		_, err := datasets.ReadLIBSVM(strings.NewReader(c.in), "f", c.d)
		var pe *datasets.ParseError
		if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: error %v, want prefix %q", c.in, err, c.want)
		}
	}
	if _, err := datasets.ReadCountedTable(strings.NewReader("2 2\n1 0 1\n-1 1\n"), "m"); err == nil || !strings.HasPrefix(err.Error(), "m:3: 2 fields") {
		t.Errorf("counted table: %v", err)
	}
	o, err = datasets.ReadCountedTable(strings.NewReader("1 2\n-1 3 4\n"), "m")
	if err != nil || o.N != 1 || o.X[1] != 4 || o.Y[0] != -1 {
		t.Errorf("counted table: %+v %v", o, err)
	}
}

// The two LIBSVM-related files of the shared data (skipped without the data, failing under CI=true).
func TestReadSharedLIBSVM(t *testing.T) {
	bc, err := datasets.ReadLIBSVMFile(datatest.Require(t, "libsvm", "breast-cancer", "breast-cancer_scale_pm1"), 10)
	if err != nil {
		t.Fatal(err)
	}
	pos := 0
	for i, y := range bc.Y {
		if y == 1 {
			pos++
		}
		for _, v := range bc.Row(i) {
			if math.Abs(v) > 1 {
				t.Fatalf("breast cancer row %d: feature %v outside [-1, 1]", i, v)
			}
		}
	}
	if bc.N != 683 || pos != 239 {
		t.Errorf("breast cancer: %d rows, %d positive; want 683, 239", bc.N, pos)
	}
	md, err := datasets.ReadCountedTableFile(datatest.Require(t, "libsvm", "madelon", "madelon_train_dense.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if md.N != 2000 || md.D != 500 {
		t.Errorf("madelon: %d×%d, want 2000×500", md.N, md.D)
	}
	mt, err := datasets.ReadLIBSVMFile(datatest.Require(t, "libsvm", "madelon", "madelon.t"), 500)
	if err != nil || mt.N != 600 {
		t.Errorf("madelon.t: %v rows, %v", mt, err)
	}
}

// FuzzReadLIBSVM: any input gives consistent observations or a *datasets.ParseError, never a panic.
func FuzzReadLIBSVM(f *testing.F) {
	for _, s := range []string{"1 1:2 3:4\n", "-1 2:0.5\n+1 1:1", "x", "1 1:", "1 :2", "1 3:1 2:1", "\n", "1 99:1"} {
		f.Add(s, 0)
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, d int) {
		if d > 1000 {
			d = 1000
		}
		o, err := datasets.ReadLIBSVM(strings.NewReader(s), "fuzz.svm", d)
		if err != nil {
			var pe *datasets.ParseError
			if !errors.As(err, &pe) || pe.Line < 1 {
				t.Fatalf("error %v (%T) is not a positioned *ParseError", err, err)
			}
			return
		}
		if o.N < 1 || o.D < 1 || len(o.Y) != o.N || len(o.X) != o.N*o.D || (d > 0 && o.D != d) {
			t.Fatalf("inconsistent: N=%d D=%d len(Y)=%d len(X)=%d d=%d", o.N, o.D, len(o.Y), len(o.X), d)
		}
	})
}

// FuzzReadCountedTable: any input gives a table with the announced rows or a positioned *datasets.ParseError, never a panic.
func FuzzReadCountedTable(f *testing.F) {
	for _, s := range []string{"2 2\n1 0 1\n-1 1 0\n", "1 2\n-1 3 4\n", "2 2\n1 0 1\n", "x y\n", "1 1\n1 nan\n", "\n\n", "0 3\n", "1 1\n1 2\n1 2\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := datasets.ReadCountedTable(strings.NewReader(s), "fuzz.txt")
		if err != nil {
			var pe *datasets.ParseError
			if !errors.As(err, &pe) || pe.Line < 1 {
				t.Fatalf("error %v (%T) is not a positioned *ParseError", err, err)
			}
			return
		}
		if o.N < 1 || o.D < 1 || len(o.Y) != o.N || len(o.X) != o.N*o.D {
			t.Fatalf("inconsistent: N=%d D=%d len(Y)=%d len(X)=%d", o.N, o.D, len(o.Y), len(o.X))
		}
	})
}
