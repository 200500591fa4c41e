package nfacompare

import (
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// Defaults are the settings in which the command lines of rcg-nssm and rcg-nfa differ.
type Defaults struct {
	Dynamic               bool   // NSSM instead of NFA
	Seeds                 int    // -seeds
	Methods, Grid, SVG    string // -methods, -n, -svg
	TaylorNote, DelayNote string // what -gh=false does to RCG, and what -hyperdelay 0 means
}

// CLI is the command line both examples share: NewCLI defines its flags, Run runs it after the flags are parsed.
type CLI struct {
	dynamic                          bool
	seeds, d, h, delay, seed0, iters *int
	methods, grid, svg, bename, ckpt *string
	rcgCap, tick                     *time.Duration
	capF, eps                        *float64
	gh, follow, ard, hier, runs      *bool
	batched, pool                    *bool
	target                           *float64
}

// NewCLI defines the examples' flags on fs, with the defaults d.
func NewCLI(fs *flag.FlagSet, d Defaults) *CLI {
	c := &CLI{dynamic: d.Dynamic}
	c.seeds = fs.Int("seeds", d.Seeds, "initialisations per size")
	c.methods = fs.String("methods", d.Methods, "methods, RCG first (also GD, Old)")
	c.grid = fs.String("n", d.Grid, "data sizes")
	c.rcgCap = fs.Duration("rcgcap", 10*time.Minute, "CPU-time cap of RCG runs")
	c.iters = fs.Int("rcgiter", 0,
		"iteration cap of RCG runs (0: none); unlike -rcgcap, it gives a target the same on every machine")
	c.capF = fs.Float64("cap", 10, "cap of non-RCG runs, × RCG's median run time")
	c.gh = fs.Bool("gh", true,
		"Gauss–Hermite moments (false: Taylor, under which RCG stalls"+d.TaylorNote+"; docs/rcg.md)")
	c.svg = fs.String("svg", d.SVG, "SVG output")
	c.d = fs.Int("d", 5, "state dimension")
	c.h = fs.Int("hidden", 20, "hidden units of each MLP")
	c.eps = fs.Float64("eps", 0, "convergence threshold on |ΔF| over 5 iterations (0: 1e-5·T/80)")
	c.follow = fs.Bool("follow", false,
		"rerun RCG's runs that missed the target within -rcgcap, with the others' budget (-cap), for a third p-value")
	c.ard = fs.Bool("ard", false, "ARD priors on the weight-matrix columns (notes §4.2.2)")
	c.hier = fs.Bool("hier", false, "hierarchical priors of the biases and log-stds (notes §4.2.2)")
	c.delay = fs.Int("hyperdelay", 0, "iterations before the -ard and -hier priors adapt ("+d.DelayNote+")")
	c.runs = fs.Bool("runs", false,
		"also print a JSON line per run (seed, final F, iterations, stop reason, time, time-to-target)")
	c.batched = fs.Bool("batched", false, "run each method's initialisations as one batch on -backend (Gauss–Hermite, "+
		"no -follow): times are the batch's wall clock, -cap counts RCG's iterations")
	c.bename = fs.String("backend", "", "backend for -batched (default $GEOVB_BACKEND, else auto)")
	c.seed0 = fs.Int("seed0", 0, "first initialisation's seed: seeds -seed0 … -seed0+seeds−1")
	c.pool = fs.Bool("pool", false, "read the files named as arguments, the -runs lines of sweeps over parts of the "+
		"seeds with one -target, and print the lines of one sweep over all their runs; runs nothing")
	c.tick = fs.Duration("progress", time.Minute, "print each running run's F and iteration on stderr each time its "+
		"clock passes another multiple of this (0: only as runs end)")
	c.ckpt = fs.String("checkpoint", "", "directory for a checkpoint of each run every 100 iterations (with "+
		"-batched: of each method's batch every 100 rounds), from which the same command started again resumes")
	targetFlag(fs, &c.target)
	return c
}

// Options returns the sweep's options as the parsed flags set them, with progress lines to stderr.
func (c *CLI) Options() Options {
	return Options{Dynamic: c.dynamic, Grid: *c.grid, Methods: *c.methods, Seeds: *c.seeds, FirstSeed: *c.seed0,
		Target: c.target, RCGCap: *c.rcgCap, RCGMaxIter: *c.iters, Cap: *c.capF, GH: *c.gh, D: *c.d, H: *c.h,
		Eps: *c.eps, Follow: *c.follow, ARD: *c.ard, Hierarchical: *c.hier, HyperDelay: *c.delay, Runs: *c.runs,
		SVG: *c.svg, Batched: *c.batched, Backend: *c.bename, Log: os.Stderr, TickEvery: *c.tick,
		CheckpointDir: *c.ckpt}
}

// Run is the examples' main, given the arguments left after the flags: with -pool, Pool of the files args to
// stdout; otherwise Main(c.Options()), which takes no arguments.
func (c *CLI) Run(args []string) error {
	if *c.pool {
		return Pool(args, os.Stdout)
	}
	if len(args) > 0 {
		return fmt.Errorf("arguments %q: files are read only with -pool", args)
	}
	if *c.d < 1 || *c.h < 1 { // Options takes 0 for the defaults; the flags have them already
		return fmt.Errorf("-d %d, -hidden %d: want at least 1 each", *c.d, *c.h)
	}
	return Main(c.Options())
}

// targetFlag defines the flag -target on fs: a finite F that sets *dst (Options.Target); left unset, *dst stays nil
// and RCG's runs set the target.
func targetFlag(fs *flag.FlagSet, dst **float64) {
	fs.Func("target", "fixed target F for every method (default: RCG's median final F + ε); with -seed0, "+
		"sweeps over parts of the seeds share it", func(s string) error {
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return err
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("target %v is not finite", v)
		}
		*dst = &v
		return nil
	})
}
