package cuda

import (
	"os"
	"testing"

	"github.com/geovb/geovb/backend/cpu"
)

// TestMain gives gonum the CPU backend's BLAS and LAPACK, as the programs do (cpu.UseForGonum): the emulated device
// computes its GEMMs, factorisations and eigen-decompositions with gonum, and the emulated runs are compared with
// the same runs on the CPU backend to 1e-10, which round-off through another GEMM kernel can exceed over many
// iterations.
func TestMain(m *testing.M) {
	cpu.UseForGonum()
	os.Exit(m.Run())
}
