package datasets

import (
	"bufio"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// Table is a numeric table read from a data file: column names and rows of finite values.
type Table struct {
	Names []string
	Rows  [][]float64
}

// HeartCols is the number of columns of the Statlog Heart file: 13 attributes and the class.
const HeartCols = 14

// ReadHeartFile reads the UCI Statlog (Heart) file at path (see ReadHeart).
func ReadHeartFile(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadHeart(f, path)
}

// ReadHeart reads heart.dat (../shared/data/README.md): an optional header line of 14 names (a line whose first field
// is not a number), then rows of 14 whitespace-separated finite numbers, the last being the class 1 (absence) or
// 2 (presence). Missing values ("?", "NA"), a wrong field count or another class value is a *ParseError naming file,
// line and column. The values are returned as read; see models/cholnglr for the paper-003 coding.
func ReadHeart(r io.Reader, name string) (*Table, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	t := &Table{}
	line := 0
	for sc.Scan() {
		line++
		f := fields(sc.Bytes())
		if len(f) == 0 {
			continue
		}
		if len(t.Rows) == 0 && t.Names == nil {
			if _, err := strconv.ParseFloat(string(f[0].s), 64); err != nil && !isMissing(f[0].s) {
				if len(f) != HeartCols {
					return nil, Errorf(name, line, 0, "header has %d names, want %d", len(f), HeartCols)
				}
				for _, x := range f {
					t.Names = append(t.Names, string(x.s))
				}
				continue
			}
		}
		if len(f) != HeartCols {
			col := 1
			if len(f) > HeartCols {
				col = f[HeartCols].col
			}
			return nil, Errorf(name, line, col, "%d fields, want %d", len(f), HeartCols)
		}
		row := make([]float64, HeartCols)
		for j, x := range f {
			v, err := parseFinite(x.s)
			if err != nil {
				return nil, Errorf(name, line, x.col, "column %d: %v", j+1, err)
			}
			row[j] = v
		}
		if c := row[HeartCols-1]; c != 1 && c != 2 {
			return nil, Errorf(name, line, f[HeartCols-1].col, "class %v, want 1 (absence) or 2 (presence)", c)
		}
		t.Rows = append(t.Rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, Errorf(name, line+1, 0, "%v", err)
	}
	if len(t.Rows) == 0 {
		return nil, Errorf(name, max(line, 1), 0, "no data rows")
	}
	return t, nil
}

func isMissing(s []byte) bool {
	switch strings.ToUpper(strings.Trim(string(s), `"`)) {
	case "?", "NA", "NAN", "":
		return true
	}
	return false
}

type valueErr string

func (e valueErr) Error() string { return string(e) }

// parseFinite parses a finite number, calling missing-value markers and NaN/Inf by name.
func parseFinite(s []byte) (float64, error) {
	if isMissing(s) {
		return 0, valueErr("missing value " + strconv.Quote(string(s)))
	}
	v, err := strconv.ParseFloat(string(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, valueErr(strconv.Quote(string(s)) + " is not a finite number")
	}
	return v, nil
}
