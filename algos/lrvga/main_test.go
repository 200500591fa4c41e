package lrvga

import (
	"os"
	"testing"

	_ "github.com/geovb/geovb/backend/all"
	"github.com/geovb/geovb/backend/cpu"
)

// TestMain gives gonum the CPU backend's BLAS, as the programs do (cpu.UseForGonum): Linear32 runs its products
// through gonum's blas64, and its tests (the allocation bound of TestLinear32Memory, T18) are stated for those
// kernels, which take their buffers from pools (gonum's own allocated 15 MB in three updates at d = 2e5).
func TestMain(m *testing.M) {
	cpu.UseForGonum()
	os.Exit(m.Run())
}
