package datasets

import (
	"bufio"
	"errors"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// ReadSP500File reads the weekly S&P 500 return series (see ReadSP500), e.g. ../shared/data/sp500/SP500_weekly_y.csv.
func ReadSP500File(path string) ([]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadSP500(f, path)
}

// ReadSP500 reads a one-column CSV of returns: an optional header line "y", then one finite number per line (the
// text export of VBayesLab's SP500_weekly.mat, 1612 weekly percentage returns with the mean removed; paper 000
// §5.2 used 1000; the file has no dates). Blank lines are skipped. A field that is not a finite number, or a line with more
// than one field, is a *ParseError with the file, line and column (1-based, counted in bytes).
func ReadSP500(r io.Reader, name string) ([]float64, error) {
	br := bufio.NewReader(r)
	var y []float64
	for line := 1; ; line++ {
		s, err := br.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if s == "" && err != nil {
			break
		}
		text := strings.TrimRight(s, "\r\n")
		if i := strings.IndexByte(text, ','); i >= 0 {
			return nil, Errorf(name, line, i+1, "want one column, found a comma")
		}
		field := strings.TrimSpace(text)
		col := strings.Index(text, field) + 1
		switch {
		case field == "":
		case line == 1 && field == "y":
		default:
			v, perr := strconv.ParseFloat(field, 64)
			if perr != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, Errorf(name, line, col, "return %q is not a finite number", field)
			}
			y = append(y, v)
		}
		if err != nil {
			break
		}
	}
	if len(y) == 0 {
		return nil, Errorf(name, 1, 0, "no returns")
	}
	return y, nil
}
