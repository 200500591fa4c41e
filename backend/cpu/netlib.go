//go:build netlib && cgo

package cpu

/*
#cgo LDFLAGS: -llapacke -lopenblas
extern void openblas_set_num_threads(int);
extern char* openblas_get_config(void);
*/
import "C"

import (
	blasnetlib "gonum.org/v1/netlib/blas/netlib"
	lapacknetlib "gonum.org/v1/netlib/lapack/netlib"
)

// With the netlib tag the backend's BLAS and LAPACK calls go to OpenBLAS and LAPACKE; the rest of the program's
// gonum calls do too only after UseForGonum.
func init() {
	blasImpl = blasnetlib.Implementation{}
	lapackImpl = lapacknetlib.Implementation{}
	library = "OpenBLAS (" + C.GoString(C.openblas_get_config()) + ") + LAPACKE"
}

// startLibrary runs OpenBLAS single-threaded, once, when the first backend starts: the backend splits large calls
// and batches over its own workers, and two thread pools on the same cores would fight.
func startLibrary() { C.openblas_set_num_threads(1) }
