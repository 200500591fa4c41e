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

// Observations are N labelled inputs: X (N×D, row-major) and Y.
type Observations struct {
	X, Y []float64
	N, D int
}

// Row returns x_n.
func (o *Observations) Row(n int) []float64 { return o.X[n*o.D : (n+1)*o.D] }

// ReadObservationsFile reads a CSV file of observations (see ReadObservations).
func ReadObservationsFile(path string) (*Observations, error) {
	return readFile(path, ReadObservations)
}

// readFile opens path and hands it to read with the path as the name used in errors.
func readFile(path string, read func(io.Reader, string) (*Observations, error)) (*Observations, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return read(f, path)
}

// eachLine calls fn with every line of r (without its line ending) and its 1-based number, and returns the number
// of lines read. It stops at the first error of fn or of the reader. Lines may be of any length.
func eachLine(r io.Reader, fn func(line int, s string) error) (int, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	line := 0
	for {
		s, err := br.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return line, err
		}
		if s == "" && err != nil {
			return line, nil
		}
		line++
		if ferr := fn(line, strings.TrimRight(s, "\r\n")); ferr != nil {
			return line, ferr
		}
		if err != nil {
			return line, nil
		}
	}
}

// ReadObservations reads comma-separated observations, one per row, y first: "y,x_1,…,x_d". Blank lines and lines
// starting with '#' are skipped; the first non-comment row is a header when its first field is not a number. Every
// row must have the same number of fields (at least 2), and every value must be a finite number. Quoted fields are
// not accepted. A malformed file gives a *ParseError naming the file, line and column (the field's first byte).
func ReadObservations(r io.Reader, name string) (*Observations, error) {
	obs := &Observations{}
	seenRow := false
	line, err := eachLine(r, func(line int, s string) error {
		if t := strings.TrimSpace(s); t == "" || t[0] == '#' {
			return nil
		}
		fields := strings.Split(s, ",")
		if !seenRow {
			seenRow = true
			if _, perr := strconv.ParseFloat(strings.TrimSpace(fields[0]), 64); perr != nil && !strings.ContainsAny(fields[0], "0123456789") {
				if len(fields) < 2 {
					return Errorf(name, line, 0, "header has %d field, want y and at least one input", len(fields))
				}
				obs.D = len(fields) - 1
				return nil
			}
		}
		if len(fields) < 2 {
			return Errorf(name, line, 0, "%d field, want y and at least one input", len(fields))
		}
		if obs.D == 0 {
			obs.D = len(fields) - 1
		}
		if len(fields)-1 != obs.D {
			return Errorf(name, line, 0, "%d inputs, want %d as in the first row", len(fields)-1, obs.D)
		}
		col := 1
		for i, f := range fields {
			v, perr := parseValue(f)
			if perr != "" {
				return Errorf(name, line, col+len(f)-len(strings.TrimLeft(f, " \t")), "field %d %q: %s", i+1, strings.TrimSpace(f), perr)
			}
			if i == 0 {
				obs.Y = append(obs.Y, v)
			} else {
				obs.X = append(obs.X, v)
			}
			col += len(f) + 1
		}
		obs.N++
		return nil
	})
	if err != nil {
		return nil, err
	}
	if obs.N == 0 {
		return nil, Errorf(name, max(line, 1), 0, "no observations")
	}
	return obs, nil
}

// parseValue parses one finite float64 field (spaces around it allowed) or says what is wrong.
func parseValue(f string) (float64, string) {
	t := strings.TrimSpace(f)
	if t == "" {
		return 0, "empty value"
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return 0, "value out of float64 range"
		}
		return 0, "not a number"
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, "not a finite number"
	}
	return v, ""
}
