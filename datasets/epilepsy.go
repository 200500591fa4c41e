package datasets

import (
	"encoding/csv"
	"errors"
	"io"
	"math"
	"os"
	"strings"
)

// Grouped is a table of repeated measures: the rows of each group are contiguous, and Group gives each row's
// 0-based group (0, 1, …, NumGroups−1 in file order).
type Grouped struct {
	Table
	Group     []int
	NumGroups int
}

// EpilepsyNames are the columns of the Epilepsy table (paper 003 §8.2 coding).
var EpilepsyNames = []string{"intercept", "base", "treatment", "base x treatment", "age", "visit", "y"}

// epilepsyVisits is the visit coding −0.3, −0.1, 0.1, 0.3 of the four two-week periods.
var epilepsyVisits = [4]float64{-0.3, -0.1, 0.1, 0.3}

// ReadEpilepsyFile reads the coded Epilepsy file at path (see ReadEpilepsy).
func ReadEpilepsyFile(path string) (*Grouped, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadEpilepsy(f, path)
}

// csvRows reads a comma-separated file with a header of want columns (names compared case-insensitively when
// names is non-nil), calling row for each data record with a function that locates field j as (line, column).
func csvRows(r io.Reader, name string, names []string, row func(rec []string, pos func(j int) (int, int)) error) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	first := true
	n := 0
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return Errorf(name, max(pe.Line, 1), max(pe.Column, 0), "%v", pe.Err)
			}
			return Errorf(name, 1, 0, "%v", err)
		}
		pos := func(j int) (int, int) {
			l, c := cr.FieldPos(min(j, len(rec)-1))
			return l, c
		}
		if first {
			first = false
			if len(rec) != len(names) {
				l, _ := pos(0)
				return Errorf(name, l, 0, "header has %d columns, want %d (%s)", len(rec), len(names), strings.Join(names, ","))
			}
			for j, s := range rec {
				if !strings.EqualFold(strings.TrimSpace(s), names[j]) {
					l, c := pos(j)
					return Errorf(name, l, c, "column %d is %q, want %q", j+1, s, names[j])
				}
			}
			continue
		}
		if len(rec) != len(names) {
			l, c := pos(len(rec) - 1)
			if len(rec) < len(names) {
				c = 0
			}
			return Errorf(name, l, c, "%d fields, want %d", len(rec), len(names))
		}
		if err := row(rec, pos); err != nil {
			return err
		}
		n++
	}
	if first {
		return Errorf(name, 1, 0, "empty file")
	}
	if n == 0 {
		return Errorf(name, 2, 0, "no data rows")
	}
	return nil
}

// ReadEpilepsy reads the coded Epilepsy data (Thall & Vail 1990 in paper 003's coding, ../shared/data/epilepsy/
// epilepsy.csv): a header of the seven EpilepsyNames, then one row per patient and visit — intercept 1,
// base = log(baseline count/4), treatment 0/1, base × treatment, centred log age, visit, and the seizure count y.
// The file has no patient id: a patient is four consecutive rows with visits −0.3, −0.1, 0.1, 0.3 and the same
// base, treatment and age. Missing values, a non-count y (negative or fractional), a broken visit sequence, a
// covariate changing within a patient (a non-contiguous group) or an inconsistent base × treatment is a
// *ParseError with file, line and column.
func ReadEpilepsy(r io.Reader, name string) (*Grouped, error) {
	g := &Grouped{Table: Table{Names: append([]string(nil), EpilepsyNames...)}}
	var cur []float64
	err := csvRows(r, name, EpilepsyNames, func(rec []string, pos func(int) (int, int)) error {
		row := make([]float64, len(rec))
		for j, s := range rec {
			v, err := parseFinite([]byte(strings.TrimSpace(s)))
			if err != nil {
				l, c := pos(j)
				return Errorf(name, l, c, "column %s: %v", EpilepsyNames[j], err)
			}
			row[j] = v
		}
		at := func(j int, format string, args ...any) error {
			l, c := pos(j)
			return Errorf(name, l, c, format, args...)
		}
		if row[0] != 1 {
			return at(0, "intercept %v, want 1", row[0])
		}
		if row[2] != 0 && row[2] != 1 {
			return at(2, "treatment %v, want 0 or 1", row[2])
		}
		if math.Abs(row[3]-row[1]*row[2]) > 1e-9*(1+math.Abs(row[1])) {
			return at(3, "base x treatment %v ≠ base·treatment %v", row[3], row[1]*row[2])
		}
		if y := row[6]; y < 0 || y != math.Trunc(y) || y > 1e15 {
			return at(6, "response %v is not a count (Poisson model)", y)
		}
		k := len(g.Rows) % 4
		if math.Abs(row[5]-epilepsyVisits[k]) > 1e-9 {
			return at(5, "visit %v, want %v (row %d of a patient's four)", row[5], epilepsyVisits[k], k+1)
		}
		if k == 0 {
			cur = row
			g.NumGroups++
		} else {
			for _, j := range []int{1, 2, 4} {
				if row[j] != cur[j] {
					return at(j, "%s %v differs from %v earlier in the same patient (groups must be contiguous)", EpilepsyNames[j], row[j], cur[j])
				}
			}
		}
		g.Rows = append(g.Rows, row)
		g.Group = append(g.Group, g.NumGroups-1)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(g.Rows)%4 != 0 {
		return nil, Errorf(name, len(g.Rows)+1, 0, "last patient has %d of 4 visits", len(g.Rows)%4)
	}
	return g, nil
}
