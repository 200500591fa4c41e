package backend

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
)

// Factory starts a backend or says why it cannot.
type Factory func() (Backend, error)

type factoryEntry struct {
	name     string
	priority int
	f        Factory
}

var (
	factoriesMu sync.Mutex
	factories   []factoryEntry
)

// RegisterFactory makes a backend available to Open under name. "auto" tries factories from the highest priority
// down. Backend packages call it from init; import github.com/geovb/geovb/backend/all to get every backend.
func RegisterFactory(name string, priority int, f Factory) {
	factoriesMu.Lock()
	defer factoriesMu.Unlock()
	for _, e := range factories {
		if e.name == name {
			panic("backend: factory " + name + " registered twice")
		}
	}
	factories = append(factories, factoryEntry{name, priority, f})
	sort.SliceStable(factories, func(i, j int) bool { return factories[i].priority > factories[j].priority })
}

// Registered lists the backend names compiled in, best first.
func Registered() []string {
	factoriesMu.Lock()
	defer factoriesMu.Unlock()
	var out []string
	for _, e := range factories {
		out = append(out, e.name)
	}
	return out
}

// EnvVar names the environment variable Open reads when given an empty name.
const EnvVar = "GEOVB_BACKEND"

// Open starts the backend called name: "cpu", "cuda", or "auto" for the best that starts (CUDA when a device and
// its libraries load, else the CPU). An empty name reads GEOVB_BACKEND, defaulting to "auto". Asking for a
// specific backend that cannot start returns an error wrapping ErrNoDevice that says why; there is no silent
// fallback. OpenReport also says which backends "auto" passed over and why.
func Open(name string) (Backend, error) {
	b, _, err := OpenReport(name)
	return b, err
}

// Skip is a backend that Open("auto") tried and passed over, with the reason it did not start.
type Skip struct {
	Name string
	Err  error
}

func (s Skip) String() string { return s.Name + ": " + s.Err.Error() }

// OpenReport is Open that also returns, for "auto", the better backends that could not start (a CUDA build on a
// machine without a GPU lists "cuda" with its reason), so that programs can say why they run on the CPU.
func OpenReport(name string) (Backend, []Skip, error) {
	if name == "" {
		name = os.Getenv(EnvVar)
	}
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" {
		name = "auto"
	}
	factoriesMu.Lock()
	fs := append([]factoryEntry(nil), factories...)
	factoriesMu.Unlock()
	if len(fs) == 0 {
		return nil, nil, fmt.Errorf("geovb: no backend compiled in (import _ \"github.com/geovb/geovb/backend/all\"): %w", ErrNoDevice)
	}
	if name == "auto" {
		var skipped []Skip
		for _, e := range fs {
			b, err := e.f()
			if err == nil {
				return b, skipped, nil
			}
			skipped = append(skipped, Skip{e.name, err})
		}
		reasons := make([]string, len(skipped))
		for i, s := range skipped {
			reasons[i] = s.String()
		}
		return nil, skipped, fmt.Errorf("geovb: no backend could start (%s): %w", strings.Join(reasons, "; "), ErrNoDevice)
	}
	b, err := openNamed(fs, name)
	return b, nil, err
}

func openNamed(fs []factoryEntry, name string) (Backend, error) {
	for _, e := range fs {
		if e.name == name {
			b, err := e.f()
			if err != nil {
				if errors.Is(err, ErrNoDevice) {
					return nil, fmt.Errorf("geovb: backend %q cannot start: %w", name, err)
				}
				return nil, fmt.Errorf("geovb: backend %q cannot start: %v: %w", name, err, ErrNoDevice)
			}
			return b, nil
		}
	}
	var names []string
	for _, e := range fs {
		names = append(names, e.name)
	}
	return nil, fmt.Errorf("geovb: unknown backend %q (compiled in: %s, or auto): %w", name, strings.Join(names, ", "), ErrNoDevice)
}
