package manifold

import (
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// workspace keeps the scratch tensors of a manifold's operations between calls, one set per operation and shape,
// so that an operation allocates backend memory on its first call only (on a GPU an allocation is a synchronous
// cuMemAlloc). The scratch belongs to one backend at a time: a call on another backend frees it and starts again.
// A manifold value is therefore not safe for concurrent use; Close frees the scratch.
type workspace struct {
	b  backend.Backend
	ts map[wsKey][]*T
}

type wsKey struct {
	op    string
	shape tensor.Shape
}

// get returns n tensors of shape s for operation op, allocating them on the first call. Their contents are
// whatever the last call left.
func (w *workspace) get(b backend.Backend, op string, s tensor.Shape, n int) ([]*T, error) {
	if w.b != b {
		w.Close()
		w.b = b
	}
	k := wsKey{op, s}
	if ts := w.ts[k]; len(ts) >= n {
		return ts[:n], nil
	}
	if w.ts == nil {
		w.ts = map[wsKey][]*T{}
	}
	for len(w.ts[k]) < n {
		t, err := b.Alloc(s)
		if err != nil {
			return nil, err
		}
		w.ts[k] = append(w.ts[k], t)
	}
	return w.ts[k], nil
}

// Close frees the scratch tensors. The manifold stays usable (they are allocated again when needed).
func (w *workspace) Close() {
	for _, ts := range w.ts {
		for _, t := range ts {
			w.b.Free(t)
		}
	}
	w.ts = nil
}
