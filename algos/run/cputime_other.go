//go:build !unix

package run

import "time"

// CPUTime falls back to wall time (nanoseconds since the epoch) where getrusage is not available.
func CPUTime() time.Duration { return time.Duration(time.Now().UnixNano()) }
