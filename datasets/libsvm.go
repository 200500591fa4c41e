package datasets

import (
	"io"
	"strconv"
	"strings"
)

// ReadLIBSVMFile reads a LIBSVM file (see ReadLIBSVM).
func ReadLIBSVMFile(path string, d int) (*Observations, error) {
	return readFile(path, func(r io.Reader, name string) (*Observations, error) { return ReadLIBSVM(r, name, d) })
}

// ReadLIBSVM reads the LIBSVM sparse format "label idx:value idx:value …" (indices from 1, strictly increasing,
// whitespace-separated) into dense rows. d is the number of features; 0 takes the largest index seen. Blank lines
// are skipped. A malformed line gives a *ParseError with the file, line and the column of the offending token.
func ReadLIBSVM(r io.Reader, name string, d int) (*Observations, error) {
	if d < 0 {
		return nil, Errorf(name, 1, 0, "negative feature count %d", d)
	}
	type entry struct {
		idx int
		v   float64
	}
	var rows [][]entry
	var labels []float64
	maxIdx := 0
	line, err := eachLine(r, func(line int, s string) error {
		toks, cols := tokens(s)
		if len(toks) == 0 {
			return nil
		}
		y, msg := parseValue(toks[0])
		if msg != "" {
			return Errorf(name, line, cols[0], "label %q: %s", toks[0], msg)
		}
		var row []entry
		prev := 0
		for i, t := range toks[1:] {
			c := cols[i+1]
			k := strings.IndexByte(t, ':')
			if k < 0 {
				return Errorf(name, line, c, "%q: want index:value", t)
			}
			idx, ierr := strconv.Atoi(t[:k])
			if ierr != nil || idx < 1 {
				return Errorf(name, line, c, "index %q: want an integer ≥ 1", t[:k])
			}
			if idx <= prev {
				return Errorf(name, line, c, "index %d after %d: indices must increase", idx, prev)
			}
			if d > 0 && idx > d {
				return Errorf(name, line, c, "index %d > %d features", idx, d)
			}
			if idx > 1<<24 {
				return Errorf(name, line, c, "index %d too large", idx)
			}
			v, msg := parseValue(t[k+1:])
			if msg != "" {
				return Errorf(name, line, c+k+1, "value %q: %s", t[k+1:], msg)
			}
			prev = idx
			row = append(row, entry{idx, v})
		}
		maxIdx = max(maxIdx, prev)
		rows = append(rows, row)
		labels = append(labels, y)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, Errorf(name, max(line, 1), 0, "no observations")
	}
	if d == 0 {
		d = maxIdx
	}
	if d == 0 {
		return nil, Errorf(name, 1, 0, "no features")
	}
	if len(rows)*d > 1<<27 {
		return nil, Errorf(name, line, 0, "%d rows × %d features: too large for a dense matrix", len(rows), d)
	}
	obs := &Observations{X: make([]float64, len(rows)*d), Y: labels, N: len(rows), D: d}
	for n, row := range rows {
		for _, e := range row {
			obs.X[n*d+e.idx-1] = e.v
		}
	}
	return obs, nil
}

// ReadCountedTableFile reads a whitespace table whose first line is "N d" followed by N rows "label f_1 … f_d"
// (the layout of the Madelon training copy in the shared data, ../shared/data/README.md).
func ReadCountedTableFile(path string) (*Observations, error) {
	return readFile(path, ReadCountedTable)
}

// ReadCountedTable is ReadCountedTableFile on a reader; name is used in errors.
func ReadCountedTable(r io.Reader, name string) (*Observations, error) {
	obs := &Observations{}
	want := -1
	line, err := eachLine(r, func(line int, s string) error {
		toks, cols := tokens(s)
		switch {
		case len(toks) == 0:
		case want < 0:
			if len(toks) != 2 {
				return Errorf(name, line, 0, "first line: want \"N d\"")
			}
			n, e1 := strconv.Atoi(toks[0])
			d, e2 := strconv.Atoi(toks[1])
			if e1 != nil || e2 != nil || n < 1 || d < 1 || n > 1<<24 || d > 1<<24 {
				return Errorf(name, line, 0, "first line %q: want two positive integers N d", strings.TrimSpace(s))
			}
			want, obs.D = n, d
		default:
			if len(toks) != obs.D+1 {
				return Errorf(name, line, 0, "%d fields, want label and %d features", len(toks), obs.D)
			}
			if obs.N == want {
				return Errorf(name, line, 0, "more than the %d rows announced", want)
			}
			for i, t := range toks {
				v, msg := parseValue(t)
				if msg != "" {
					return Errorf(name, line, cols[i], "%q: %s", t, msg)
				}
				if i == 0 {
					obs.Y = append(obs.Y, v)
				} else {
					obs.X = append(obs.X, v)
				}
			}
			obs.N++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if want < 0 || obs.N != want {
		return nil, Errorf(name, max(line, 1), 0, "%d rows, %d announced", obs.N, max(want, 0))
	}
	return obs, nil
}

// tokens splits s at spaces and tabs, returning the tokens and their 1-based byte columns.
func tokens(s string) ([]string, []int) {
	var toks []string
	var cols []int
	start := -1
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' || s[i] == '\t' {
			if start >= 0 {
				toks = append(toks, s[start:i])
				cols = append(cols, start+1)
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	return toks, cols
}
