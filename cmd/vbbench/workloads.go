package main

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/models/nfa"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// dims are the sizes of one workload instance. Each workload uses a subset (its uses list) with its own meaning,
// stated in its desc; the command-line flags -batch, -m, -n, -d, -p and -k set them directly.
type dims struct {
	Batch int `json:"batch,omitempty"`
	M     int `json:"m,omitempty"`
	N     int `json:"n,omitempty"`
	D     int `json:"d,omitempty"`
	P     int `json:"p,omitempty"`
	K     int `json:"k,omitempty"`
}

// dimNames are the names of the dims fields, in the order labels print them.
var dimNames = []string{"batch", "m", "n", "d", "p", "k"}

func (d *dims) field(name string) *int {
	switch name {
	case "batch":
		return &d.Batch
	case "m":
		return &d.M
	case "n":
		return &d.N
	case "d":
		return &d.D
	case "p":
		return &d.P
	case "k":
		return &d.K
	}
	panic("vbbench: unknown dimension " + name)
}

// label prints the dims a workload uses, e.g. "batch=1000 n=100 p=10".
func (d dims) label(uses []string) string {
	var parts []string
	for _, name := range dimNames {
		for _, u := range uses {
			if u == name {
				parts = append(parts, fmt.Sprintf("%s=%d", name, *d.field(name)))
			}
		}
	}
	return strings.Join(parts, " ")
}

// workload is one row of the benchmark: a hot operation (or, later, one step of a method) at named sizes.
//
// Adding a workload is appending one entry to the workloads slice below: the driver, the reference check, the
// floors, the table, JSON, CSV and -compare need no change. Each method issue (MGVB, NNVB, L-RVGA, SGGMC/gSGNHT,
// Cholesky natural gradient, RCG) adds its step here, with a name in its own group (e.g. "mgvb.step") so that
// -ops mgvb selects it. If a method step has no separate reference implementation, its setup ignores ref and the
// check compares two runs of the step on identical inputs, which still catches nondeterminism and NaNs.
type workload struct {
	name  string   // "group.name"; -ops takes a name or a group
	op    string   // the backend operation timed (its Op name), for the report
	desc  string   // one line: what a call computes and what the dims mean
	uses  []string // the dims this workload reads, from dimNames
	sizes map[string]dims
	// check returns the smaller instance on which the timed kernel is compared with the reference before timing:
	// same kernel class (the function timed at the full size is the one checked), little memory.
	check func(d dims) dims
	// cost is the nominal work of one call: floating-point operations and bytes that must move between memory
	// and the cores (each operand read or written once unless stated). The same counts serve every kernel, so
	// rates compare across kernels and backends; docs/benchmarks.md lists them.
	cost func(d dims) (flops, bytes float64)
	// setBytes is the memory of one rotated set of operands; tempBytes bounds the temporaries one call allocates
	// (the reference's, which are the larger). Both are checked against free memory before anything is allocated.
	setBytes  func(d dims) float64
	tempBytes func(d dims) float64
	// kernel names the implementation Select picks for dims on b.
	kernel func(b backend.Backend, d dims) string
	// setup allocates nbuf sets of random operands at dims and returns an instance whose run calls the kernel
	// selected for the shape at sel, or the reference when ref is set.
	setup func(b backend.Backend, d, sel dims, ref bool, nbuf int, f *filler) (*instance, error)
	// checkKind is how the check before timing works: "" or checkReference compares with the reference;
	// checkDeterminism (the method workloads, algos.go) compares two runs from the same seed.
	checkKind string
}

// instance is a prepared workload: nbuf rotated operand sets and the call to time.
type instance struct {
	nbuf    int
	run     func(set int) error // one call on operand set number set (0 ≤ set < nbuf)
	outputs func(set int) []*T  // the tensors a call on that set writes, for the reference check
	closers []func()            // released by close
	tensors []*T                // freed by close
	be      backend.Backend     // owner of the tensors
	// selfTimed, when set, returns the timed part of the last call in seconds as the call measured it: the mean
	// time of a method fit's iterations from its run recorder (algos.go), without the fit's start. sample then
	// reports it in place of the clock around the call (which still sizes the warm-up and the sample count).
	selfTimed func() float64
}

// T is tensor.Tensor, as in package backend.
type T = tensor.Tensor

func (in *instance) close() {
	for i := len(in.closers) - 1; i >= 0; i-- {
		in.closers[i]()
	}
	for _, t := range in.tensors {
		in.be.Free(t)
	}
	in.closers, in.tensors = nil, nil
}

// alloc allocates a tensor owned by the instance.
func (in *instance) alloc(batch, rows, cols int) (*T, error) {
	t, err := in.be.Alloc(tensor.Shape{Batch: batch, Rows: rows, Cols: cols})
	if err != nil {
		return nil, err
	}
	in.tensors = append(in.tensors, t)
	return t, nil
}

// filler writes reproducible random operands through the backend, each fill from its own Philox stream, so two
// setups with the same seed and the same sequence of fills get identical data (the reference check relies on it).
type filler struct {
	b      backend.Backend
	seed   uint64
	stream uint64
}

func (f *filler) counter() rng.Counter {
	f.stream++
	return rng.Counter{Seed: f.seed, Stream: f.stream}
}

// normal fills t with scale·N(0, 1).
func (f *filler) normal(t *T, scale float64) error {
	if err := f.b.FillNormal(t, f.counter()); err != nil {
		return err
	}
	if scale == 1 {
		return nil
	}
	return f.b.Axpby(t, scale, t, 0, nil)
}

// positive fills t with e^U, U uniform on (0, 1): values in (1, e).
func (f *filler) positive(t *T) error {
	if err := f.b.FillUniform(t, f.counter()); err != nil {
		return err
	}
	return f.b.Map(t, backend.Exp, 1, t)
}

// spd fills each n×n matrix of t with A Aᵀ/n + I, A standard normal: well conditioned, eigenvalues in about
// [1, 5].
func (f *filler) spd(t *T) error {
	a, err := f.b.Alloc(t.Shape())
	if err != nil {
		return err
	}
	defer f.b.Free(a)
	if err := f.normal(a, 1); err != nil {
		return err
	}
	if err := f.b.Syrk(blas.NoTrans, 1/float64(t.Rows()), a, 0, t); err != nil {
		return err
	}
	return f.b.AddDiag(t, 1)
}

// sym fills t with symmetric matrices of scale·N(0, 1) entries.
func (f *filler) sym(t *T, scale float64) error {
	if err := f.normal(t, scale); err != nil {
		return err
	}
	return f.b.Symmetrize(t)
}

// pick returns the implementation of op used for an operand of shape s on b (or the reference) and its name.
func pick[F any](op *backend.Op[F], b backend.Backend, s tensor.Shape, ref bool) (F, string) {
	if ref {
		return op.Reference(), "reference"
	}
	return op.Select(b, s)
}

func kernelName[F any](op *backend.Op[F], b backend.Backend, s tensor.Shape) string {
	_, name := op.Select(b, s)
	return name
}

func shp(batch, rows, cols int) tensor.Shape {
	return tensor.Shape{Batch: batch, Rows: rows, Cols: cols}
}

func f64(xs ...int) float64 {
	r := 1.0
	for _, x := range xs {
		r *= float64(x)
	}
	return r
}

// The workload table. Sizes: quick (CI, milliseconds), small and medium (the default run, about a minute in all on
// two cores), large (d = 1e6, p = 100 for the low-rank operations; a few GB of memory).
var workloads = []*workload{
	{
		name: "qr.batch", op: backend.QRRetractOp.Name(),
		desc: "Stiefel QR retraction X ← qf(X + 0.1·V), in place, for batch matrices of n×p",
		uses: []string{"batch", "n", "p"},
		sizes: map[string]dims{
			"quick": {Batch: 64, N: 100, P: 10}, "small": {Batch: 1000, N: 100, P: 10},
			"medium": {Batch: 20000, N: 100, P: 10}, "large": {Batch: 100000, N: 100, P: 10},
		},
		check: func(d dims) dims { d.Batch = min(d.Batch, 32); return d },
		// Householder QR with Q formed (LAPACK dgeqrf + dorgqr): 2·(2np² − 2p³/3), plus 2np for X + tV.
		// Bytes: X and V read, X written.
		cost: func(d dims) (float64, float64) {
			n, p := float64(d.N), float64(d.P)
			return float64(d.Batch) * (4*n*p*p - 4*p*p*p/3 + 2*n*p), 8 * 3 * f64(d.Batch, d.N, d.P)
		},
		setBytes:  func(d dims) float64 { return 8 * 2 * f64(d.Batch, d.N, d.P) },
		tempBytes: func(d dims) float64 { return 8 * f64(d.Batch, d.N, d.P) },
		kernel: func(b backend.Backend, d dims) string {
			return kernelName(backend.QRRetractOp, b, shp(d.Batch, d.N, d.P))
		},
		setup: func(b backend.Backend, d, sel dims, ref bool, nbuf int, f *filler) (*instance, error) {
			return setupQR(b, d.Batch, d.N, d.P, shp(sel.Batch, sel.N, sel.P), ref, nbuf, f)
		},
	},
	{
		name: "qr.tall", op: backend.QRRetractOp.Name(),
		desc: "Stiefel QR retraction X ← qf(X + 0.1·V), in place, for one tall d×p matrix",
		uses: []string{"d", "p"},
		sizes: map[string]dims{
			"quick": {D: 10000, P: 8}, "small": {D: 50000, P: 20},
			"medium": {D: 200000, P: 50}, "large": {D: 1000000, P: 100},
		},
		check: func(d dims) dims { d.D = min(d.D, 20000); return d },
		cost: func(d dims) (float64, float64) {
			n, p := float64(d.D), float64(d.P)
			return 4*n*p*p - 4*p*p*p/3 + 2*n*p, 8 * 3 * n * p
		},
		setBytes:  func(d dims) float64 { return 8 * 2 * f64(d.D, d.P) },
		tempBytes: func(d dims) float64 { return 8 * f64(d.D, d.P) },
		kernel: func(b backend.Backend, d dims) string {
			return kernelName(backend.QRRetractOp, b, shp(1, d.D, d.P))
		},
		setup: func(b backend.Backend, d, sel dims, ref bool, nbuf int, f *filler) (*instance, error) {
			return setupQR(b, 1, d.D, d.P, shp(1, sel.D, sel.P), ref, nbuf, f)
		},
	},
	{
		name: "spd.retract", op: backend.SPDRetractOp.Name(),
		desc: "SPD retraction Σ + ξ + ½ξΣ⁻¹ξ for batch n×n matrices",
		uses: []string{"batch", "n"},
		sizes: map[string]dims{
			"quick": {Batch: 16, N: 10}, "small": {Batch: 2000, N: 10},
			"medium": {Batch: 200, N: 50}, "large": {Batch: 100, N: 200},
		},
		check: func(d dims) dims { d.Batch = min(d.Batch, 8); return d },
		// Cholesky n³/3, triangular solve L⁻¹ξ n³, SYRK of the n×n result n³: 7n³/3; the element-wise terms O(n²)
		// are left out. Bytes: Σ and ξ read, the result written.
		cost: func(d dims) (float64, float64) {
			n := float64(d.N)
			return float64(d.Batch) * 7 * n * n * n / 3, 8 * 3 * f64(d.Batch, d.N, d.N)
		},
		setBytes:  func(d dims) float64 { return 8 * 3 * f64(d.Batch, d.N, d.N) },
		tempBytes: func(d dims) float64 { return 8 * 3 * f64(d.Batch, d.N, d.N) },
		kernel: func(b backend.Backend, d dims) string {
			return kernelName(backend.SPDRetractOp, b, shp(d.Batch, d.N, d.N))
		},
		setup: setupSPDRetract,
	},
	{
		name: "spd.transport", op: backend.SPDTransportOp.Name(),
		desc: "SPD vector transport E ξ Eᵀ, E = (S₂S₁⁻¹)^½, for batch n×n matrices",
		uses: []string{"batch", "n"},
		sizes: map[string]dims{
			"quick": {Batch: 16, N: 10}, "small": {Batch: 1000, N: 10},
			"medium": {Batch: 100, N: 50}, "large": {Batch: 50, N: 200},
		},
		check: func(d dims) dims { d.Batch = min(d.Batch, 8); return d },
		// Cholesky n³/3, four triangular solves 4n³, symmetric eigen-decomposition with vectors 9n³ (the Golub–Van
		// Loan count), SYRK n³, two GEMMs 4n³, two triangular multiplies 2n³: 61n³/3. Bytes: S₁, S₂, ξ read, the
		// result written.
		cost: func(d dims) (float64, float64) {
			n := float64(d.N)
			return float64(d.Batch) * 61 * n * n * n / 3, 8 * 4 * f64(d.Batch, d.N, d.N)
		},
		setBytes:  func(d dims) float64 { return 8 * 4 * f64(d.Batch, d.N, d.N) },
		tempBytes: func(d dims) float64 { return 8 * 4 * f64(d.Batch, d.N, d.N) },
		kernel: func(b backend.Backend, d dims) string {
			return kernelName(backend.SPDTransportOp, b, shp(d.Batch, d.N, d.N))
		},
		setup: setupSPDTransport,
	},
	{
		name: "kron.solve", op: backend.KronSolveOp.Name(),
		desc: "K-FAC solve (B + γI)⁻¹ G (A + γI)⁻¹ for batch layers, G m×n, A n×n, B m×m",
		uses: []string{"batch", "m", "n"},
		sizes: map[string]dims{
			"quick": {Batch: 4, M: 16, N: 32}, "small": {Batch: 16, M: 64, N: 128},
			"medium": {Batch: 4, M: 256, N: 512}, "large": {Batch: 2, M: 1024, N: 1024},
		},
		check: func(d dims) dims { d.Batch = min(d.Batch, 2); d.M = min(d.M, 128); d.N = min(d.N, 128); return d },
		// Cholesky of both factors (n³ + m³)/3, B⁻¹G by POTRS 2m²n, ·A⁻¹ by two triangular solves 2mn².
		// Bytes: A, B, G read, the result written.
		cost: func(d dims) (float64, float64) {
			m, n := float64(d.M), float64(d.N)
			return float64(d.Batch) * ((n*n*n+m*m*m)/3 + 2*m*m*n + 2*m*n*n),
				8 * float64(d.Batch) * (n*n + m*m + 2*m*n)
		},
		setBytes: func(d dims) float64 {
			return 8 * float64(d.Batch) * (f64(d.N, d.N) + f64(d.M, d.M) + 2*f64(d.M, d.N))
		},
		tempBytes: func(d dims) float64 { return 8 * float64(d.Batch) * (f64(d.N, d.N) + f64(d.M, d.M)) },
		kernel: func(b backend.Backend, d dims) string {
			return kernelName(backend.KronSolveOp, b, shp(d.Batch, d.M, d.N))
		},
		setup: setupKron,
	},
	{
		name: "lowrank.capacitance", op: backend.CapacitanceOp.Name(),
		desc: "capacitance factor chol(I + WᵀΨ⁻¹W) of a d×p low-rank-plus-diagonal precision (LogDet, Refactor)",
		uses: []string{"d", "p"},
		sizes: map[string]dims{
			"quick": {D: 2000, P: 10}, "small": {D: 20000, P: 20},
			"medium": {D: 200000, P: 50}, "large": {D: 1000000, P: 100},
		},
		check: func(d dims) dims { d.D = min(d.D, 20000); return d },
		// SYRK of Ψ^{-1/2}W dp², Cholesky p³/3, scaling dp. Bytes: W and ψ read once.
		cost: func(d dims) (float64, float64) {
			dd, p := float64(d.D), float64(d.P)
			return dd*p*p + p*p*p/3 + dd*p, 8 * (dd*p + dd)
		},
		setBytes:  func(d dims) float64 { return 8 * (f64(d.D, d.P) + f64(d.D)) },
		tempBytes: func(d dims) float64 { return 8 * (f64(d.D, d.P) + f64(d.D)) },
		kernel: func(b backend.Backend, d dims) string {
			return kernelName(backend.CapacitanceOp, b, shp(1, d.D, d.P))
		},
		setup: setupCapacitance,
	},
	{
		name: "lowrank.solve", op: backend.SolveOp.Name(),
		desc: "Woodbury solve (WWᵀ + Ψ)⁻¹g, W d×p, g d×k",
		uses: []string{"d", "p", "k"},
		sizes: map[string]dims{
			"quick": {D: 2000, P: 10, K: 1}, "small": {D: 20000, P: 20, K: 1},
			"medium": {D: 200000, P: 50, K: 1}, "large": {D: 1000000, P: 100, K: 1},
		},
		check: func(d dims) dims { d.D = min(d.D, 20000); return d },
		// u = Wᵀ(g ⊘ ψ) 2dpk, v = M⁻¹u by POTRS 2p²k, (g − Wv) ⊘ ψ 2dpk + 3dk. Bytes: W read twice (Wᵀ· must
		// finish before W· starts, and a large W does not stay in cache), g and ψ read, the result written.
		cost: func(d dims) (float64, float64) {
			dd, p, k := float64(d.D), float64(d.P), float64(d.K)
			return 4*dd*p*k + 2*p*p*k + 3*dd*k, 8 * (2*dd*p + 2*dd*k + dd)
		},
		setBytes:  func(d dims) float64 { return 8 * (f64(d.D, d.P) + f64(d.D) + 2*f64(d.D, d.K) + f64(d.P, d.P)) },
		tempBytes: func(d dims) float64 { return 8 * (f64(d.D, d.K) + f64(d.D) + f64(d.P, d.K)) },
		kernel: func(b backend.Backend, d dims) string {
			return kernelName(backend.SolveOp, b, shp(1, d.D, d.P))
		},
		setup: setupSolve,
	},
	{
		name: "lowrank.sample", op: backend.SampleOp.Name(),
		desc: "ensemble sampling of k draws of N(μ, (WWᵀ + Ψ)⁻¹), W d×p",
		uses: []string{"d", "p", "k"},
		sizes: map[string]dims{
			"quick": {D: 2000, P: 10, K: 10}, "small": {D: 20000, P: 20, K: 10},
			"medium": {D: 200000, P: 50, K: 10}, "large": {D: 1000000, P: 100, K: 10},
		},
		check: func(d dims) dims { d.D = min(d.D, 20000); return d },
		// Wᵀx 2dpk, POTRS 2p²k, W·e 2dpk, the three diagonal scalings and the mean 4dk; the (d + p)k normal draws
		// are not counted as flops. Bytes: W read twice, ψ and μ read, the k draws written.
		cost: func(d dims) (float64, float64) {
			dd, p, k := float64(d.D), float64(d.P), float64(d.K)
			return 4*dd*p*k + 2*p*p*k + 4*dd*k, 8 * (2*dd*p + 2*dd + dd*k)
		},
		setBytes:  func(d dims) float64 { return 8 * (f64(d.D, d.P) + 2*f64(d.D) + f64(d.D, d.K) + f64(d.P, d.P)) },
		tempBytes: func(d dims) float64 { return 8 * (f64(d.D) + f64(d.P, d.K)) },
		kernel: func(b backend.Backend, d dims) string {
			return kernelName(backend.SampleOp, b, shp(1, d.D, d.P))
		},
		setup: setupSample,
	},
	{
		name: "lowrank.em_step", op: backend.EMStepOp.Name(),
		desc: "one recursive-EM factor-analysis step (first inner iteration), W d×p, k new columns X",
		uses: []string{"d", "p", "k"},
		sizes: map[string]dims{
			"quick": {D: 2000, P: 10, K: 10}, "small": {D: 20000, P: 20, K: 10},
			"medium": {D: 100000, P: 50, K: 10}, "large": {D: 1000000, P: 100, K: 10},
		},
		check: func(d dims) dims { d.D = min(d.D, 20000); return d },
		// The least work of the step: 2.5dp² + 2dpk multiply-adds (M = WᵀΨ⁻¹W, B, the solve with M + B and
		// W_new = G M with no d×p temporary), i.e. 5dp² + 4dpk flops. Bytes: W read twice and written, X read
		// twice, ψ read and written, diag S written.
		cost: func(d dims) (float64, float64) {
			dd, p, k := float64(d.D), float64(d.P), float64(d.K)
			return 5*dd*p*p + 4*dd*p*k, 8 * (3*dd*p + 2*dd*k + 3*dd)
		},
		setBytes:  func(d dims) float64 { return 8 * (f64(d.D, d.P) + f64(d.D) + f64(d.D, d.K)) },
		tempBytes: func(d dims) float64 { return 8 * (2*f64(d.D, d.P) + 2*f64(d.D)) },
		kernel: func(b backend.Backend, d dims) string {
			return kernelName(backend.EMStepOp, b, shp(1, d.D, d.P))
		},
		setup: setupEMStep,
	},
	{
		name: "sphere.flow", op: backend.SphereFlowOp.Name(),
		desc: "geodesic flow of (x, v) for step h on a product of m spheres S^(n-1), batch states, in place",
		uses: []string{"batch", "m", "n"},
		sizes: map[string]dims{
			"quick": {Batch: 4, M: 16, N: 32}, "small": {Batch: 100, M: 100, N: 50},
			"medium": {Batch: 1000, M: 100, N: 100}, "large": {Batch: 10000, M: 100, N: 100},
		},
		check: func(d dims) dims { d.Batch = min(d.Batch, 4); return d },
		// Per row of n: ‖v‖² 2n, x cos + v h sinc 3n, −α sin x + v cos 3n (the per-row sin, cos, sinc not
		// counted). Bytes: x and v read and written.
		cost: func(d dims) (float64, float64) {
			rows := f64(d.Batch, d.M)
			return rows * 8 * float64(d.N), 8 * 4 * rows * float64(d.N)
		},
		setBytes:  func(d dims) float64 { return 8 * 2 * f64(d.Batch, d.M, d.N) },
		tempBytes: func(d dims) float64 { return 8 * 2 * f64(d.Batch, d.M, d.N) },
		kernel: func(b backend.Backend, d dims) string {
			return kernelName(backend.SphereFlowOp, b, shp(d.Batch, d.M, d.N))
		},
		setup: setupSphereFlow,
	},
	{
		name: "chain.natgrad", op: backend.ChainNatGradOp.Name(),
		desc: "natural gradient of the means of m scalar Gaussian Markov chains of n steps per state, batch states",
		uses: []string{"batch", "m", "n"},
		sizes: map[string]dims{
			"quick": {Batch: 4, M: 3, N: 64}, "small": {Batch: 1, M: 5, N: 1000},
			"medium": {Batch: 30, M: 5, N: 1000}, "large": {Batch: 30, M: 30, N: 10000},
		},
		check: func(d dims) dims { d.Batch = min(d.Batch, 2); return d },
		// Per step: the backward recurrence 2 flops, the scaling by s̊ 1, the forward recurrence 2 (the sequential
		// form; the reference's doubling scans do about 4⌈log₂ n⌉). Bytes: g, s̆, s̊ read, the result written.
		cost: func(d dims) (float64, float64) {
			steps := f64(d.Batch, d.M, d.N)
			return 5 * steps, 8 * 4 * steps
		},
		setBytes:  func(d dims) float64 { return 8 * 4 * f64(d.Batch, d.M, d.N) },
		tempBytes: func(d dims) float64 { return 8 * 3 * f64(d.Batch, d.M, d.N) },
		kernel: func(b backend.Backend, d dims) string {
			return kernelName(backend.ChainNatGradOp, b, shp(d.Batch, d.M, d.N))
		},
		setup: setupChainNatGrad,
	},
	{
		name: "gh.tanh", op: backend.GHTanhOp.Name(),
		desc:  "Gauss–Hermite moments of tanh (10 nodes: node values, E tanh, E tanh²) of m hidden units over n steps, batch runs: the batched NFA/NSSM layer's nonlinearity",
		uses:  []string{"batch", "n", "m"},
		sizes: ghSizes,
		check: func(d dims) dims { d.Batch = min(d.Batch, 2); return d },
		// Per element and node: the argument (2 flops), tanh (about 20) and the two sums (4). Bytes: y and sd read,
		// the node values and the two sums written.
		cost: func(d dims) (float64, float64) {
			e := f64(d.Batch, d.N, d.M)
			return 26 * ghQ * e, 8 * (ghQ + 4) * e
		},
		setBytes:  func(d dims) float64 { return 8 * (ghQ + 4) * f64(d.Batch, d.N, d.M) },
		tempBytes: func(d dims) float64 { return 8 * f64(d.Batch, d.N, d.M) },
		kernel: func(b backend.Backend, d dims) string {
			return kernelName(backend.GHTanhOp, b, shp(d.Batch, d.N, d.M))
		},
		setup: setupGH(false),
	},
	{
		name: "gh.tanh_back", op: backend.GHTanhBackOp.Name(),
		desc:  "reverse pass of gh.tanh through its 10 nodes (gradients with respect to the pre-activations' means and standard deviations), m hidden units over n steps, batch runs",
		uses:  []string{"batch", "n", "m"},
		sizes: ghSizes,
		check: func(d dims) dims { d.Batch = min(d.Batch, 2); return d },
		// Per element and node: 1 − u², gk·u + gm, their product and the two sums: 9 flops. Bytes: the node values,
		// gk and gm read, the two gradients written.
		cost: func(d dims) (float64, float64) {
			e := f64(d.Batch, d.N, d.M)
			return 9 * ghQ * e, 8 * (ghQ + 4) * e
		},
		setBytes:  func(d dims) float64 { return 8 * (ghQ + 4) * f64(d.Batch, d.N, d.M) },
		tempBytes: func(d dims) float64 { return 8 * 3 * f64(d.Batch, d.N, d.M) },
		kernel: func(b backend.Backend, d dims) string {
			return kernelName(backend.GHTanhBackOp, b, shp(d.Batch, d.N, d.M))
		},
		setup: setupGH(true),
	},
}

// ghQ is the Gauss–Hermite order of the gh.* workloads (models/nfa's default).
const ghQ = 10

// ghSizes are the batched NSSM's layers: one run of Fig. 9's size (T = 1000, H = 20), 8 runs, 30 runs of Fig. 10's
// (H = 30).
var ghSizes = map[string]dims{
	"quick": {Batch: 2, N: 40, M: 6}, "small": {Batch: 1, N: 1000, M: 20},
	"medium": {Batch: 8, N: 1000, M: 20}, "large": {Batch: 30, N: 1000, M: 30},
}

// lookupWorkload returns the workload called name, or nil.
func lookupWorkload(name string) *workload {
	for _, w := range workloads {
		if w.name == name {
			return w
		}
	}
	return nil
}

// ---- setups ----

func newInstance(b backend.Backend, nbuf int) *instance {
	return &instance{be: b, nbuf: nbuf}
}

// fail closes in and returns err (for setup error paths).
func fail(in *instance, err error) (*instance, error) {
	in.close()
	return nil, err
}

func setupQR(b backend.Backend, batch, n, p int, sel tensor.Shape, ref bool, nbuf int, f *filler) (*instance, error) {
	fn, _ := pick(backend.QRRetractOp, b, sel, ref)
	in := newInstance(b, nbuf)
	xs := make([]*T, nbuf)
	vs := make([]*T, nbuf)
	for i := range nbuf {
		var err error
		if xs[i], err = in.alloc(batch, n, p); err != nil {
			return fail(in, err)
		}
		if vs[i], err = in.alloc(batch, n, p); err != nil {
			return fail(in, err)
		}
		if err := f.normal(xs[i], 1); err != nil {
			return fail(in, err)
		}
		if err := f.normal(vs[i], 1); err != nil {
			return fail(in, err)
		}
	}
	in.run = func(s int) error { return fn(b, xs[s], xs[s], vs[s], 0.1) }
	in.outputs = func(s int) []*T { return []*T{xs[s]} }
	return in, nil
}

func setupSPDRetract(b backend.Backend, d, sel dims, ref bool, nbuf int, f *filler) (*instance, error) {
	fn, _ := pick(backend.SPDRetractOp, b, shp(sel.Batch, sel.N, sel.N), ref)
	in := newInstance(b, nbuf)
	type set struct{ sigma, xi, dst *T }
	sets := make([]set, nbuf)
	for i := range sets {
		s := &sets[i]
		for _, t := range []**T{&s.sigma, &s.xi, &s.dst} {
			var err error
			if *t, err = in.alloc(d.Batch, d.N, d.N); err != nil {
				return fail(in, err)
			}
		}
		if err := f.spd(s.sigma); err != nil {
			return fail(in, err)
		}
		if err := f.sym(s.xi, 0.3); err != nil {
			return fail(in, err)
		}
	}
	in.run = func(i int) error { s := sets[i]; return fn(b, s.dst, s.sigma, s.xi) }
	in.outputs = func(i int) []*T { return []*T{sets[i].dst} }
	return in, nil
}

func setupSPDTransport(b backend.Backend, d, sel dims, ref bool, nbuf int, f *filler) (*instance, error) {
	fn, _ := pick(backend.SPDTransportOp, b, shp(sel.Batch, sel.N, sel.N), ref)
	in := newInstance(b, nbuf)
	type set struct{ s1, s2, xi, dst *T }
	sets := make([]set, nbuf)
	for i := range sets {
		s := &sets[i]
		for _, t := range []**T{&s.s1, &s.s2, &s.xi, &s.dst} {
			var err error
			if *t, err = in.alloc(d.Batch, d.N, d.N); err != nil {
				return fail(in, err)
			}
		}
		if err := f.spd(s.s1); err != nil {
			return fail(in, err)
		}
		if err := f.spd(s.s2); err != nil {
			return fail(in, err)
		}
		if err := f.sym(s.xi, 1); err != nil {
			return fail(in, err)
		}
	}
	in.run = func(i int) error { s := sets[i]; return fn(b, s.dst, s.s1, s.s2, s.xi) }
	in.outputs = func(i int) []*T { return []*T{sets[i].dst} }
	return in, nil
}

func setupKron(b backend.Backend, d, sel dims, ref bool, nbuf int, f *filler) (*instance, error) {
	fn, _ := pick(backend.KronSolveOp, b, shp(sel.Batch, sel.M, sel.N), ref)
	in := newInstance(b, nbuf)
	type set struct{ a, bm, g, dst *T }
	sets := make([]set, nbuf)
	for i := range sets {
		s := &sets[i]
		var err error
		if s.a, err = in.alloc(d.Batch, d.N, d.N); err != nil {
			return fail(in, err)
		}
		if s.bm, err = in.alloc(d.Batch, d.M, d.M); err != nil {
			return fail(in, err)
		}
		if s.g, err = in.alloc(d.Batch, d.M, d.N); err != nil {
			return fail(in, err)
		}
		if s.dst, err = in.alloc(d.Batch, d.M, d.N); err != nil {
			return fail(in, err)
		}
		if err := f.spd(s.a); err != nil {
			return fail(in, err)
		}
		if err := f.spd(s.bm); err != nil {
			return fail(in, err)
		}
		if err := f.normal(s.g, 1); err != nil {
			return fail(in, err)
		}
	}
	const damping = 1e-3
	in.run = func(i int) error { s := sets[i]; return fn(b, s.dst, s.a, s.bm, s.g, damping) }
	in.outputs = func(i int) []*T { return []*T{sets[i].dst} }
	return in, nil
}

// lowRankSet is one set of low-rank operands: W (1×d×p, N(0, 1)), ψ in (1, e), and the capacitance factor.
type lowRankSet struct {
	w, psi *T
	lr     *backend.LowRank
}

func newLowRankSets(in *instance, d dims, nbuf int, f *filler) ([]lowRankSet, error) {
	sets := make([]lowRankSet, nbuf)
	for i := range sets {
		s := &sets[i]
		var err error
		if s.w, err = in.alloc(1, d.D, d.P); err != nil {
			return nil, err
		}
		if s.psi, err = in.alloc(1, d.D, 1); err != nil {
			return nil, err
		}
		if err := f.normal(s.w, 1); err != nil {
			return nil, err
		}
		if err := f.positive(s.psi); err != nil {
			return nil, err
		}
		if s.lr, err = backend.NewLowRank(in.be, s.w, s.psi); err != nil {
			return nil, err
		}
		in.closers = append(in.closers, s.lr.Close)
	}
	return sets, nil
}

func setupCapacitance(b backend.Backend, d, sel dims, ref bool, nbuf int, f *filler) (*instance, error) {
	fn, _ := pick(backend.CapacitanceOp, b, shp(1, sel.D, sel.P), ref)
	in := newInstance(b, nbuf)
	sets, err := newLowRankSets(in, d, nbuf, f)
	if err != nil {
		return fail(in, err)
	}
	ls := make([]*T, nbuf)
	for i := range ls {
		if ls[i], err = in.alloc(1, d.P, d.P); err != nil {
			return fail(in, err)
		}
	}
	in.run = func(i int) error { return fn(b, ls[i], sets[i].w, sets[i].psi) }
	in.outputs = func(i int) []*T { return []*T{ls[i]} }
	return in, nil
}

func setupSolve(b backend.Backend, d, sel dims, ref bool, nbuf int, f *filler) (*instance, error) {
	fn, _ := pick(backend.SolveOp, b, shp(1, sel.D, sel.P), ref)
	in := newInstance(b, nbuf)
	sets, err := newLowRankSets(in, d, nbuf, f)
	if err != nil {
		return fail(in, err)
	}
	gs, dsts := make([]*T, nbuf), make([]*T, nbuf)
	for i := range gs {
		if gs[i], err = in.alloc(1, d.D, d.K); err != nil {
			return fail(in, err)
		}
		if dsts[i], err = in.alloc(1, d.D, d.K); err != nil {
			return fail(in, err)
		}
		if err := f.normal(gs[i], 1); err != nil {
			return fail(in, err)
		}
	}
	in.run = func(i int) error { s := sets[i]; return fn(b, dsts[i], s.w, s.psi, s.lr.L, gs[i]) }
	in.outputs = func(i int) []*T { return []*T{dsts[i]} }
	return in, nil
}

func setupSample(b backend.Backend, d, sel dims, ref bool, nbuf int, f *filler) (*instance, error) {
	fn, _ := pick(backend.SampleOp, b, shp(1, sel.D, sel.P), ref)
	in := newInstance(b, nbuf)
	sets, err := newLowRankSets(in, d, nbuf, f)
	if err != nil {
		return fail(in, err)
	}
	mus, dsts := make([]*T, nbuf), make([]*T, nbuf)
	for i := range mus {
		if mus[i], err = in.alloc(1, d.D, 1); err != nil {
			return fail(in, err)
		}
		if dsts[i], err = in.alloc(1, d.D, d.K); err != nil {
			return fail(in, err)
		}
		if err := f.normal(mus[i], 1); err != nil {
			return fail(in, err)
		}
	}
	c := f.counter()
	in.run = func(i int) error { s := sets[i]; return fn(b, dsts[i], s.w, s.psi, s.lr.L, mus[i], c) }
	in.outputs = func(i int) []*T { return []*T{dsts[i]} }
	return in, nil
}

func setupEMStep(b backend.Backend, d, sel dims, ref bool, nbuf int, f *filler) (*instance, error) {
	fn, _ := pick(backend.EMStepOp, b, shp(1, sel.D, sel.P), ref)
	in := newInstance(b, nbuf)
	type set struct{ w, psi, x *T }
	sets := make([]set, nbuf)
	for i := range sets {
		s := &sets[i]
		var err error
		if s.w, err = in.alloc(1, d.D, d.P); err != nil {
			return fail(in, err)
		}
		if s.psi, err = in.alloc(1, d.D, 1); err != nil {
			return fail(in, err)
		}
		if s.x, err = in.alloc(1, d.D, d.K); err != nil {
			return fail(in, err)
		}
		if err := f.normal(s.w, 1); err != nil {
			return fail(in, err)
		}
		if err := f.positive(s.psi); err != nil {
			return fail(in, err)
		}
		if err := f.normal(s.x, 1); err != nil {
			return fail(in, err)
		}
	}
	// S = 0.9 (WWᵀ + Ψ) + (0.1/k) XXᵀ: a forgetting factor, so repeated steps in place stay bounded.
	beta := 0.1 / float64(max(d.K, 1))
	in.run = func(i int) error {
		s := sets[i]
		_, err := fn(b, backend.EMStepArgs{W: s.w, Psi: s.psi, X: s.x, Alpha: 0.9, Beta: beta})
		return err
	}
	in.outputs = func(i int) []*T { return []*T{sets[i].w, sets[i].psi} }
	return in, nil
}

func setupSphereFlow(b backend.Backend, d, sel dims, ref bool, nbuf int, f *filler) (*instance, error) {
	fn, _ := pick(backend.SphereFlowOp, b, shp(sel.Batch, sel.M, sel.N), ref)
	in := newInstance(b, nbuf)
	xs, vs := make([]*T, nbuf), make([]*T, nbuf)
	for i := range xs {
		var err error
		if xs[i], err = in.alloc(d.Batch, d.M, d.N); err != nil {
			return fail(in, err)
		}
		if vs[i], err = in.alloc(d.Batch, d.M, d.N); err != nil {
			return fail(in, err)
		}
		if err := f.normal(xs[i], 1); err != nil {
			return fail(in, err)
		}
		if err := f.normal(vs[i], 1); err != nil {
			return fail(in, err)
		}
		// Unit rows of x and tangent rows of v.
		if err := backend.SphereNormalize(b, xs[i], vs[i]); err != nil {
			return fail(in, err)
		}
	}
	in.run = func(i int) error { return fn(b, xs[i], vs[i], 0.05) }
	in.outputs = func(i int) []*T { return []*T{xs[i], vs[i]} }
	return in, nil
}

// setupChainNatGrad fills g with N(0, 1), s̆ with 0.8 sin 2πU ∈ (−0.8, 0.8) (|s̆| < 1, as for a fitted chain) and
// s̊ with values in (1, e).
func setupChainNatGrad(b backend.Backend, d, sel dims, ref bool, nbuf int, f *filler) (*instance, error) {
	fn, _ := pick(backend.ChainNatGradOp, b, shp(sel.Batch, sel.M, sel.N), ref)
	in := newInstance(b, nbuf)
	type set struct{ dst, g, breve, ring *T }
	sets := make([]set, nbuf)
	for i := range sets {
		var ts [4]*T
		for j := range ts {
			var err error
			if ts[j], err = in.alloc(d.Batch, d.M, d.N); err != nil {
				return fail(in, err)
			}
		}
		sets[i] = set{ts[0], ts[1], ts[2], ts[3]}
		if err := f.normal(sets[i].g, 1); err != nil {
			return fail(in, err)
		}
		if err := f.b.FillUniform(sets[i].breve, f.counter()); err != nil {
			return fail(in, err)
		}
		if err := b.Map(sets[i].breve, backend.Sin, 2*math.Pi, sets[i].breve); err != nil { // sin 2πU ∈ (−1, 1)
			return fail(in, err)
		}
		if err := b.Axpby(sets[i].breve, 0.8, sets[i].breve, 0, nil); err != nil {
			return fail(in, err)
		}
		if err := f.positive(sets[i].ring); err != nil {
			return fail(in, err)
		}
	}
	in.run = func(i int) error { c := sets[i]; return fn(b, c.dst, c.g, c.breve, c.ring) }
	in.outputs = func(i int) []*T { return []*T{sets[i].dst} }
	return in, nil
}

// setupGH prepares gh.tanh (back false: random pre-activation means and positive standard deviations) or
// gh.tanh_back (node values tanh of normal draws, random upstream factors) with models/nfa's 10-node rule.
func setupGH(back bool) func(b backend.Backend, d, sel dims, ref bool, nbuf int, f *filler) (*instance, error) {
	return func(b backend.Backend, d, sel dims, ref bool, nbuf int, f *filler) (*instance, error) {
		fwd, _ := pick(backend.GHTanhOp, b, shp(sel.Batch, sel.N, sel.M), ref)
		rev, _ := pick(backend.GHTanhBackOp, b, shp(sel.Batch, sel.N, sel.M), ref)
		in := newInstance(b, nbuf)
		z, w := nfa.GHNodes(ghQ)
		zh := tensor.NewHost(1, 2, ghQ)
		for q := range ghQ {
			zh.Set(0, 0, q, z[q])
			zh.Set(0, 1, q, w[q])
		}
		zw, err := in.alloc(1, 2, ghQ)
		if err != nil {
			return fail(in, err)
		}
		if err := b.Upload(zw, zh); err != nil {
			return fail(in, err)
		}
		type set struct{ o1, o2, u, x1, x2 *T }
		sets := make([]set, nbuf)
		for i := range sets {
			var ts [5]*T
			for j := range ts {
				rows := d.N
				if j == 2 {
					rows = ghQ * d.N
				}
				if ts[j], err = in.alloc(d.Batch, rows, d.M); err != nil {
					return fail(in, err)
				}
			}
			c := set{ts[0], ts[1], ts[2], ts[3], ts[4]}
			sets[i] = c
			if err := f.normal(c.x1, 2); err != nil {
				return fail(in, err)
			}
			if back {
				if err := f.normal(c.x2, 1); err != nil {
					return fail(in, err)
				}
				if err := f.normal(c.u, 2); err != nil {
					return fail(in, err)
				}
				if err := b.Map(c.u, backend.Tanh, 1, c.u); err != nil {
					return fail(in, err)
				}
			} else if err := f.positive(c.x2); err != nil {
				return fail(in, err)
			}
		}
		if back {
			in.run = func(i int) error { c := sets[i]; return rev(b, c.o1, c.o2, c.u, c.x1, c.x2, zw) }
			in.outputs = func(i int) []*T { return []*T{sets[i].o1, sets[i].o2} }
		} else {
			in.run = func(i int) error { c := sets[i]; return fwd(b, c.o1, c.o2, c.u, c.x1, c.x2, zw) }
			in.outputs = func(i int) []*T { return []*T{sets[i].o1, sets[i].o2, sets[i].u} }
		}
		return in, nil
	}
}
