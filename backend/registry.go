package backend

import (
	"slices"
	"sort"
	"sync"

	"github.com/geovb/geovb/tensor"
)

// Kernel is one implementation of a hot operation with signature F, registered for one backend.
type Kernel[F any] struct {
	Name     string // unique, e.g. "cpu.qr.householder-small"
	Backend  string // Backend.Name() it serves
	Priority int    // the applicable kernel with the highest priority wins; the reference has priority 0
	// Applies reports whether the kernel handles this call; nil means always. It sees the shape of the operation's
	// main operand (documented with each operation) and may consult CPU features or the device.
	Applies func(b Backend, s tensor.Shape) bool
	Fn      F
}

// Op is a hot operation: a reference implementation written with the Backend primitives, which works on every
// backend, and the kernels registered to replace it on particular backends, shapes or CPU features. Adding a kernel
// is a Register call in the backend's package; callers never change.
type Op[F any] struct {
	name    string
	ref     F
	mu      sync.RWMutex
	kernels []Kernel[F]
}

type opInfo interface {
	Name() string
	KernelNames() []string
}

var (
	opsMu sync.Mutex
	ops   []opInfo
)

// NewOp declares a hot operation with its reference implementation.
func NewOp[F any](name string, ref F) *Op[F] {
	o := &Op[F]{name: name, ref: ref}
	opsMu.Lock()
	ops = append(ops, o)
	opsMu.Unlock()
	return o
}

// Name returns the operation's name.
func (o *Op[F]) Name() string { return o.name }

// Reference returns the reference implementation.
func (o *Op[F]) Reference() F { return o.ref }

// Register adds a kernel. It panics on a duplicate name (a programming mistake).
func (o *Op[F]) Register(k Kernel[F]) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range o.kernels {
		if e.Name == k.Name {
			panic("backend: kernel " + k.Name + " registered twice for " + o.name)
		}
	}
	o.kernels = append(o.kernels, k)
	sort.SliceStable(o.kernels, func(i, j int) bool { return o.kernels[i].Priority > o.kernels[j].Priority })
}

// Select returns the implementation to use on b for an operand of shape s, and its name ("reference" when no
// registered kernel applies).
func (o *Op[F]) Select(b Backend, s tensor.Shape) (F, string) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	name := b.Name()
	for _, k := range o.kernels {
		if k.Backend == name && (k.Applies == nil || k.Applies(b, s)) {
			return k.Fn, k.Name
		}
	}
	return o.ref, "reference"
}

// Kernels returns the kernels registered for b that apply to shape s, best first; tests run each of them against
// the reference.
func (o *Op[F]) Kernels(b Backend, s tensor.Shape) []Kernel[F] {
	o.mu.RLock()
	defer o.mu.RUnlock()
	var out []Kernel[F]
	for _, k := range o.kernels {
		if k.Backend == b.Name() && (k.Applies == nil || k.Applies(b, s)) {
			out = append(out, k)
		}
	}
	return out
}

// KernelNames lists every registered kernel of the operation.
func (o *Op[F]) KernelNames() []string {
	o.mu.RLock()
	defer o.mu.RUnlock()
	var out []string
	for _, k := range o.kernels {
		out = append(out, k.Name)
	}
	return out
}

// OpNames lists the hot operations, sorted, with their registered kernels.
func OpNames() map[string][]string {
	opsMu.Lock()
	defer opsMu.Unlock()
	m := make(map[string][]string, len(ops))
	for _, o := range ops {
		m[o.Name()] = slices.Clone(o.KernelNames())
	}
	return m
}
