//go:build unix

package rcg

import (
	"syscall"
	"time"
)

// CPUTime returns the CPU time (user + system) used by this process so far. The experiment runners (RunMoG and the
// NFA/NSSM runs) time in CPU time, as the paper does (notes §7.12): on a shared machine wall time depends on the
// other load more than on the method.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return time.Duration(time.Now().UnixNano())
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
