// Package kernels holds the CUDA C sources of the CUDA backend's kernels, one module per file (core.cu, philox.cu,
// and one per family of hot operations), embedded in the binary. The backend (backend/cuda) compiles a module with
// NVRTC for the device found on first use; nothing here needs CUDA to build.
package kernels

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"
)

//go:embed *.cu
var files embed.FS

// Source returns the CUDA C source of module (its file name without ".cu").
func Source(module string) (string, error) {
	src, err := files.ReadFile(module + ".cu")
	if err != nil {
		return "", fmt.Errorf("kernels: no module %q: %w", module, err)
	}
	return string(src), nil
}

// Modules lists the modules, sorted.
func Modules() []string {
	names, _ := fs.Glob(files, "*.cu") // the pattern is valid
	for i, n := range names {
		names[i] = strings.TrimSuffix(n, ".cu")
	}
	return names
}
