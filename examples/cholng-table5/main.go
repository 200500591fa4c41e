// Command cholng-table5 reproduces the full-covariance and full-precision rows of Table 5 of paper 003 (logistic
// regression on German credit, Heart and ICU): for each data set, parametrisation and method it prints one JSON
// line with T (iterations), L̂ (1000-draw mean of h) and the time.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/geovb/geovb/algos/cholng"
	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/all"
	"github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/models/cholnglr"
)

func main() {
	cpu.UseForGonum() // the models' gonum calls and the backend's LAPACK on the CPU backend's kernels
	seed := flag.Uint64("seed", 1, "random seed")
	bname := flag.String("backend", "", "backend (cpu, cuda, auto; default $GEOVB_BACKEND)")
	flag.Parse()
	if err := mainErr(*bname, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "cholng-table5:", err)
		os.Exit(1)
	}
}

func mainErr(bname string, seed uint64) error {
	b, err := backend.Open(bname)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "backend: %s (%s)\n", b.Name(), b.Info().Library)
	models := map[string]*cholnglr.Model{}
	p, err := datasets.Path("german-credit", "german.data")
	if err != nil {
		return err
	}
	if models["german"], err = cholnglr.GermanFile(p); err != nil {
		return err
	}
	if p, err = datasets.Path("heart", "heart.dat"); err != nil {
		return err
	}
	h, err := datasets.ReadHeartFile(p)
	if err != nil {
		return err
	}
	models["heart"] = cholnglr.Heart(h)
	if p, err = datasets.Path("icu", "icu.csv"); err != nil {
		return err
	}
	ic, err := datasets.ReadICUFile(p)
	if err != nil {
		return err
	}
	models["icu"] = cholnglr.ICU(ic)
	enc := json.NewEncoder(os.Stdout)
	for _, name := range []string{"german", "heart", "icu"} {
		for _, par := range []cholng.Param{cholng.Covariance, cholng.Precision} {
			for _, m := range []struct {
				name string
				opt  cholng.Optimizer
				kind cholng.Kind
			}{{"euclidean-adam", cholng.Adam, cholng.Euclidean}, {"natural-adam", cholng.Adam, cholng.Natural}, {"natural-snngm", cholng.Snngm, cholng.Natural}} {
				res, err := cholng.Fit(context.Background(), b, models[name], cholng.Config{Param: par, Optimizer: m.opt, Kind: m.kind, Seed: seed})
				if err != nil {
					return err
				}
				if err := enc.Encode(map[string]any{"dataset": name, "family": par.String(), "method": m.name,
					"T": res.Iters, "lhat": res.LHat, "seconds": res.Time.Seconds(), "reason": res.Reason}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
