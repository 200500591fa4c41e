//go:build netlib && cgo

package cpu

/*
#cgo LDFLAGS: -llapacke -lopenblas
extern void openblas_set_num_threads(int);
extern char* openblas_get_config(void);
*/
import "C"

import (
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	blasnetlib "gonum.org/v1/netlib/blas/netlib"
	lapacknetlib "gonum.org/v1/netlib/lapack/netlib"
)

// With the netlib tag every gonum BLAS and LAPACK call in the process goes to OpenBLAS and LAPACKE. OpenBLAS runs
// single-threaded: the backend splits large calls and batches over its own workers, and two thread pools on the
// same cores would fight.
func init() {
	blas64.Use(blasnetlib.Implementation{})
	lapack64.Use(lapacknetlib.Implementation{})
	C.openblas_set_num_threads(1)
	library = "OpenBLAS (" + C.GoString(C.openblas_get_config()) + ") + LAPACKE"
}
