package main

import (
	"fmt"
	"io"
	"strings"
)

// printMarkdown writes a report as the Markdown of docs/benchmarks.md: the command, date and machine of the run,
// the floors of each backend, and one table of the workloads per backend.
func printMarkdown(w io.Writer, rep *report) {
	fmt.Fprintf(w, "Command: `%s` (%s, %s/%s, %s).\n\n", rep.Command, rep.Date, rep.OS, rep.Arch, rep.Go)
	for _, be := range rep.Backends {
		fmt.Fprintf(w, "**%s**: %s, %s, %d cores", be.Name, be.Device, be.Library, be.Cores)
		if len(be.Features) > 0 {
			fmt.Fprintf(w, ", %s", strings.Join(be.Features, " "))
		}
		fmt.Fprintf(w, ". Floors of the run: bandwidth %s GB/s, GEMM %s GFLOP/s.\n\n", fmtRate(be.Floors.BandGBps),
			fmtRate(be.Floors.GemmGFLOPS))
		fmt.Fprintln(w, "| workload | size | dims | kernel | median | spread | GFLOP/s | GB/s | % of floor |")
		fmt.Fprintln(w, "|---|---|---|---|--:|--:|--:|--:|--:|")
		for _, r := range rep.Records {
			if r.Backend != be.Name {
				continue
			}
			cells := []string{r.Workload, r.Size, r.DimsLabel, r.Kernel}
			if r.Status == statusOK {
				pct := fmt.Sprintf("%.1f %%", r.PercentOfFloor)
				if r.Suspect {
					pct += " (!)"
				}
				cells = append(cells, fmtSeconds(r.Median), fmt.Sprintf("%.0f %%", 100*r.Spread), fmtRate(r.GFLOPS),
					fmtRate(r.GBps), pct)
			} else {
				cells = append(cells, strings.ToUpper(r.Status), "", "", "", "")
			}
			for i, c := range cells {
				cells[i] = strings.ReplaceAll(c, "|", `\|`)
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
		}
		fmt.Fprintln(w)
	}
}
