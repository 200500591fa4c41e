//go:build unix

package run

import (
	"syscall"
	"time"
)

// CPUTime returns the CPU time (user + system) used by this process so far. Experiment runners that compare methods
// by time (rcg's MoG and NFA/NSSM runs, as paper 004 does; samvi's time budgets) can measure in CPU time: on a shared
// machine wall time depends on the other load more than on the method.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return time.Duration(time.Now().UnixNano())
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
