package lrvgacli

import (
	"strings"
	"testing"
)

// Negative or zero sizes are refused with the flag named (they made the data generators panic).
func TestCheck(t *testing.T) {
	good := Flags{D: 10, N: 5, P: 2, Inner: 0}
	if err := good.Check(); err != nil {
		t.Fatalf("good flags refused: %v", err)
	}
	for _, c := range []struct {
		edit func(*Flags)
		want string
	}{
		{func(f *Flags) { f.D = -5 }, "-d -5"},
		{func(f *Flags) { f.D = 0 }, "-d 0"},
		{func(f *Flags) { f.N = 0 }, "-n 0"},
		{func(f *Flags) { f.P = -1 }, "-p -1"},
		{func(f *Flags) { f.Inner = -2 }, "-inner -2"},
	} {
		f := good
		c.edit(&f)
		if err := f.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %q", f, err, c.want)
		}
	}
}
