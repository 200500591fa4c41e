// Command lrvga-table12 measures Tables 1 and 2 of paper 002 (notes §4.3): the persistent state of L-RVGA
// (exactly 8d(p+2) bytes in float64; 8d(p+1) for the
// recursive EM alone), the backend memory in use (the filter double-buffers its state), and the time of one recursive-EM step (1 inner
// iteration) and of one L-RVGA linear-regression step (-inner, 3 by default) at d = 1e6, with the GEMM floor of
// the same run: the time the step's multiply-adds (≈ 6dp² per inner iteration, notes §3.1) would take at the rate
// measured for one d×p by d×p Gram GEMM. It prints JSON lines.
//
//	go run -tags netlib ./examples/lrvga-table12 -d 1000000 -p 100
package main

import (
	"flag"
	"math/rand/v2"
	"runtime"
	"time"

	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/algos/lrvga"
	"github.com/geovb/geovb/examples/internal/lrvgacli"
	"github.com/geovb/geovb/tensor"
)

func main() {
	fl := lrvgacli.Register(lrvgacli.Flags{D: 1000000, N: 2, P: 100, Inner: 3, Seed: 1})
	flag.Parse()
	d, p := fl.D, fl.P
	b := lrvgacli.Open(fl.Backend)
	defer b.Close()
	r := rand.New(rand.NewPCG(fl.Seed, 1))
	x := make([]float64, d)
	for i := range x {
		x[i] = r.NormFloat64() / 1000
	}
	// GEMM floor: the Gram matrix Wᵀ W of a d×p factor, dp² multiply-adds.
	w, err := b.Alloc(tensor.Shape{Batch: 1, Rows: d, Cols: p})
	if err != nil {
		lrvgacli.Fatal(err)
	}
	g, _ := b.Alloc(tensor.Shape{Batch: 1, Rows: p, Cols: p})
	_ = b.Fill(w, 0.5)
	start := time.Now()
	if err := b.Gemm(blas.Trans, blas.NoTrans, 1, w, w, 0, g); err != nil {
		lrvgacli.Fatal(err)
	}
	_ = b.Sync()
	rate := float64(d) * float64(p) * float64(p) / time.Since(start).Seconds() // multiply-adds per second
	b.Free(w)
	b.Free(g)
	lrvgacli.Emit(map[string]any{"gemm_gmacs": rate / 1e9})

	// Table 1: one recursive-EM step (covariance mode, 1 inner iteration): state W, ψ.
	fa, err := lrvga.NewRecursiveFA(b, lrvga.FAConfig{D: d, P: p, Inner: 1, Seed: fl.Seed})
	if err != nil {
		lrvgacli.Fatal(err)
	}
	for t := 0; t < fl.N; t++ {
		start := time.Now()
		if err := fa.Update(x); err != nil {
			lrvgacli.Fatal(err)
		}
		_ = b.Sync()
		emit("recursive-em", 1, t, time.Since(start).Seconds(), rate, d, p, 8*int64(d)*int64(p+1), b.MemInUse())
	}
	fa.Close()
	// Table 2: one L-RVGA linear-regression step with -inner iterations: state μ, W, ψ = 8d(p+2) bytes.
	f, err := lrvga.New(b, lrvga.Config{D: d, P: p, Inner: fl.Inner, Seed: fl.Seed})
	if err != nil {
		lrvgacli.Fatal(err)
	}
	for t := 0; t < fl.N; t++ {
		start := time.Now()
		if err := f.Update(x, 1); err != nil {
			lrvgacli.Fatal(err)
		}
		_ = b.Sync()
		emit("lrvga-linear", fl.Inner, t, time.Since(start).Seconds(), rate, d, p, f.StateBytes(), b.MemInUse())
	}
	f.Close()
}

// emit prints one timing line; the floor counts 6dp² multiply-adds per inner iteration plus dp² for the
// capacitance of the new factors (notes §3.1).
func emit(method string, inner, t int, sec, rate float64, d, p int, state, inUse int64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	floor := float64(6*inner+1) * float64(d) * float64(p) * float64(p) / rate
	lrvgacli.Emit(map[string]any{"method": method, "d": d, "p": p, "inner": inner, "step": t + 1,
		"seconds": sec, "gemm_floor_seconds": floor, "ratio_to_floor": sec / floor,
		"state_bytes": state, "backend_bytes_in_use": inUse, "go_heap_sys_bytes": ms.HeapSys})
}
