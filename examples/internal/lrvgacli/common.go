// Package common holds the flags and output helpers shared by the L-RVGA example programs (examples/lrvga-*): every
// program takes -d, -n, -p, -inner, -seed, -backend and -data, and prints its metrics as JSON lines on stdout.
package lrvgacli

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/all" // registers every backend compiled in
	"github.com/geovb/geovb/datasets"
)

// Flags are the options every example understands.
type Flags struct {
	D, N, P, Inner int
	Seed           uint64
	Backend        string
	Data           string
}

// Register declares the common flags with the program's defaults.
func Register(def Flags) *Flags {
	f := &def
	flag.IntVar(&f.D, "d", def.D, "dimension d")
	flag.IntVar(&f.N, "n", def.N, "number of observations N")
	flag.IntVar(&f.P, "p", def.P, "latent rank p (< d)")
	flag.IntVar(&f.Inner, "inner", def.Inner, "inner EM iterations per observation (n_in)")
	flag.Uint64Var(&f.Seed, "seed", def.Seed, "random seed")
	flag.StringVar(&f.Backend, "backend", "auto", "backend: cpu, cuda or auto")
	flag.StringVar(&f.Data, "data", "", "read the observations from this CSV file (one per row, y first) instead of generating them")
	return f
}

// Check reports the first common flag out of range, before any data is generated or read: -d, -n and -p must be
// ≥ 1 and -inner ≥ 0 (0 takes the method's default). The method checks p < d itself.
func (f *Flags) Check() error {
	switch {
	case f.D < 1:
		return fmt.Errorf("-d %d: the dimension must be ≥ 1", f.D)
	case f.N < 1:
		return fmt.Errorf("-n %d: the number of observations must be ≥ 1", f.N)
	case f.P < 1:
		return fmt.Errorf("-p %d: the latent rank must be ≥ 1", f.P)
	case f.Inner < 0:
		return fmt.Errorf("-inner %d: the inner iterations must be ≥ 0 (0: the method's default)", f.Inner)
	}
	return nil
}

// Open starts the backend and prints a JSON line saying which one runs.
func Open(name string) backend.Backend {
	b, err := backend.Open(name)
	if err != nil {
		Fatal(err)
	}
	info := b.Info()
	Emit(map[string]any{"backend": info.Name, "library": info.Library, "device": info.Device})
	return b
}

// LoadData reads the -data file when given: it returns nil when no file was named. The file's d overrides -d and its
// row count -n.
func (f *Flags) LoadData() *datasets.Observations {
	if f.Data == "" {
		return nil
	}
	o, err := datasets.ReadObservationsFile(f.Data)
	if err != nil {
		Fatal(err)
	}
	f.D, f.N = o.D, o.N
	return o
}

// Emit prints v as one JSON line.
func Emit(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		Fatal(err)
	}
	fmt.Println(string(b))
}

// Fatal prints the error as a JSON line on stderr and exits with status 1.
func Fatal(err error) {
	b, _ := json.Marshal(map[string]string{"error": err.Error()})
	fmt.Fprintln(os.Stderr, string(b))
	os.Exit(1)
}

// Usage prints a usage error as a JSON line on stderr and exits with status 2.
func Usage(format string, a ...any) {
	b, _ := json.Marshal(map[string]string{"error": fmt.Sprintf(format, a...)})
	fmt.Fprintln(os.Stderr, string(b))
	os.Exit(2)
}
