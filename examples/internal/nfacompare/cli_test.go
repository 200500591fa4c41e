package nfacompare

import (
	"flag"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

var nssmDefaults = Defaults{Dynamic: true, Seeds: 8, Methods: "RCG,CG,RG,Old", Grid: "200,300,400,500",
	SVG: "rcg-nssm.svg", DelayNote: "0: 100, negative: none"}

// newCLI parses args with the command line of defaults d.
func newCLI(t *testing.T, d Defaults, args ...string) (*CLI, []string) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := NewCLI(fs, d)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return c, fs.Args()
}

// Every flag reaches its field of Options, and the defaults and the model come from Defaults.
func TestCLIOptions(t *testing.T) {
	c, _ := newCLI(t, nssmDefaults)
	o := c.Options()
	if !o.Dynamic || o.Seeds != 8 || o.Methods != "RCG,CG,RG,Old" || o.Grid != "200,300,400,500" ||
		o.SVG != "rcg-nssm.svg" || o.RCGCap != 10*time.Minute || o.Cap != 10 || !o.GH || o.D != 5 || o.H != 20 ||
		o.TickEvery != time.Minute || o.Target != nil || o.Log != os.Stderr {
		t.Errorf("defaults: %+v", o)
	}
	c, _ = newCLI(t, Defaults{Seeds: 10, Methods: "RCG,CG,RG", Grid: "300", SVG: "rcg-nfa.svg"},
		"-seeds", "5", "-methods", "RCG,Old", "-n", "1000", "-rcgcap", "12m", "-rcgiter", "9156", "-cap", "3",
		"-gh=false", "-svg", "f10.svg", "-d", "7", "-hidden", "30", "-eps", "1e-6", "-follow", "-ard", "-hier",
		"-hyperdelay", "50", "-runs", "-batched", "-backend", "cpu", "-seed0", "4", "-progress", "30s",
		"-target", "-13928.87", "-checkpoint", "ck")
	o = c.Options()
	want := Options{Grid: "1000", Methods: "RCG,Old", Seeds: 5, FirstSeed: 4, RCGCap: 12 * time.Minute,
		RCGMaxIter: 9156, Cap: 3, D: 7, H: 30, Eps: 1e-6, Follow: true, ARD: true, Hierarchical: true,
		HyperDelay: 50, Runs: true, SVG: "f10.svg", Batched: true, Backend: "cpu", Log: os.Stderr,
		TickEvery: 30 * time.Second, CheckpointDir: "ck"}
	if o.Target == nil || *o.Target != -13928.87 {
		t.Errorf("-target: %v", o.Target)
	}
	o.Target = nil
	if o != want {
		t.Errorf("flags: %+v\nwant   %+v", o, want)
	}
}

// Files are read only with -pool, and -pool needs them; -d and -hidden must be at least 1.
func TestCLIRunArgs(t *testing.T) {
	c, args := newCLI(t, nssmDefaults, "part.jsonl")
	if err := c.Run(args); err == nil || !strings.Contains(err.Error(), "-pool") {
		t.Errorf("arguments without -pool: %v", err)
	}
	c, args = newCLI(t, nssmDefaults, "-pool")
	if err := c.Run(args); err == nil || !strings.Contains(err.Error(), "no files") {
		t.Errorf("-pool without files: %v", err)
	}
	for _, flags := range [][]string{{"-d", "0"}, {"-hidden", "0"}} { // 0 would take Options' defaults unseen
		c, args = newCLI(t, nssmDefaults, flags...)
		if err := c.Run(args); err == nil || !strings.Contains(err.Error(), strings.Join(flags, " ")) {
			t.Errorf("%v: %v", flags, err)
		}
	}
}
