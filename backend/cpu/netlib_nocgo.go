//go:build netlib && !cgo

package cpu

// The netlib tag links OpenBLAS through cgo; building it with CGO_ENABLED=0 is a mistake this line reports at
// compile time.
var _ = netlibBuildNeedsCgoEnabled
