package lrvgacli

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// ResetPeak returns the garbage of earlier work to the operating system (a full collection and
// debug.FreeOSMemory) and resets the kernel's high-water mark of the process's resident set (Linux
// /proc/self/clear_refs), so that PeakRSS then reports the peak of what follows. It reports whether the reset worked.
func ResetPeak() bool {
	runtime.GC()
	debug.FreeOSMemory()
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// PeakRSS returns the process's peak resident set in bytes since the last ResetPeak (VmHWM), or 0 where /proc is
// missing.
func PeakRSS() int64 { return procStatus("VmHWM") }

// RSS returns the process's current resident set in bytes (VmRSS), or 0.
func RSS() int64 { return procStatus("VmRSS") }

// procStatus reads "field: N kB" from /proc/self/status and returns N·1024, or 0.
func procStatus(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			fs := strings.Fields(rest)
			if len(fs) == 0 {
				return 0
			}
			v, err := strconv.ParseInt(fs[0], 10, 64)
			if err != nil {
				return 0
			}
			return v * 1024
		}
	}
	return 0
}
