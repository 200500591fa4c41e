package datasets

import (
	"bufio"
	"io"
	"math"
	"os"
	"strconv"
)

// German is the UCI Statlog German credit data, numeric version (germancredit_numeric.txt, ../shared/data/README.md):
// N rows of 24 covariates and a binary label, as read from the file (no preprocessing; see GermanDesign).
type German struct {
	X [][]float64 // N rows of the 24 covariates, in file order
	Y []float64   // 1 = good, 0 = bad
}

// GermanCols is the number of covariate columns of the numeric German credit file.
const GermanCols = 24

// ReadGermanFile reads the German credit file at path (see ReadGerman).
func ReadGermanFile(path string) (*German, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadGerman(f, path)
}

// ReadGerman reads the whitespace-separated numeric German credit table: one row per line of 24 finite numeric
// covariates and a class in the last column. The class is coded either as in UCI's german.data-numeric (1 = good,
// 2 = bad, the file in ../shared/data) or already recoded as 1 = good, 0 = bad; both are
// returned as y ∈ {1, 0}, the recoding of paper 000's code. Blank lines and CRLF endings are allowed.
// A missing or extra field, a non-numeric or non-finite value, a label outside the two codings, or a file that
// mixes them (a 0 and a 2) is a *ParseError naming file, line and column (1-based, in bytes).
func ReadGerman(r io.Reader, name string) (*German, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	g := &German{}
	line := 0
	coding := 0 // 0 unknown, 1 = {1,2}, 2 = {0,1}
	codingLine := 0
	for sc.Scan() {
		line++
		f := fields(sc.Bytes())
		if len(f) == 0 {
			continue
		}
		if len(f) != GermanCols+1 {
			col := 1
			if len(f) > GermanCols+1 {
				col = f[GermanCols+1].col
			}
			return nil, Errorf(name, line, col, "%d fields, want %d (24 covariates and the class)", len(f), GermanCols+1)
		}
		row := make([]float64, GermanCols)
		for j := 0; j < GermanCols; j++ {
			v, err := strconv.ParseFloat(string(f[j].s), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, Errorf(name, line, f[j].col, "column %d: %q is not a finite number", j+1, f[j].s)
			}
			row[j] = v
		}
		lab := f[GermanCols]
		var y float64
		switch string(lab.s) {
		case "1":
			y = 1
		case "2", "0":
			c := 1
			if lab.s[0] == '0' {
				c = 2
			}
			if coding != 0 && coding != c {
				return nil, Errorf(name, line, lab.col, "class %s mixes the 1/2 coding with the 1/0 coding (line %d)", lab.s, codingLine)
			}
			coding, codingLine = c, line
			y = 0
		default:
			return nil, Errorf(name, line, lab.col, "class %q, want 1 (good) or 2/0 (bad)", lab.s)
		}
		g.X = append(g.X, row)
		g.Y = append(g.Y, y)
	}
	if err := sc.Err(); err != nil {
		return nil, Errorf(name, line+1, 0, "%v", err)
	}
	if len(g.Y) == 0 {
		return nil, Errorf(name, max(line, 1), 0, "no data rows")
	}
	return g, nil
}

// GermanDesign is the design of paper 000's German credit experiment (§5.1, with the authors' preprocessing): columns 1–15 z-scored with the
// sample standard deviation (n−1 denominator), columns 16–24 (0/1 indicators) as they are, and with intercept a
// leading column of ones (d = 25, the paper's configuration; d = 24 without). It returns X row-major (N×d).
// A constant column among 1–15 cannot be z-scored and is left centred only.
func (g *German) GermanDesign(intercept bool) (x []float64, n, d int) {
	n = len(g.Y)
	d = GermanCols
	off := 0
	if intercept {
		d++
		off = 1
	}
	x = make([]float64, n*d)
	for j := 0; j < GermanCols; j++ {
		mean, sd := 0.0, 1.0
		if j < 15 && n > 1 {
			for i := 0; i < n; i++ {
				mean += g.X[i][j]
			}
			mean /= float64(n)
			ss := 0.0
			for i := 0; i < n; i++ {
				ss += (g.X[i][j] - mean) * (g.X[i][j] - mean)
			}
			if s := math.Sqrt(ss / float64(n-1)); s > 0 {
				sd = s
			}
		}
		for i := 0; i < n; i++ {
			x[i*d+off+j] = (g.X[i][j] - mean) / sd
		}
	}
	if intercept {
		for i := 0; i < n; i++ {
			x[i*d] = 1
		}
	}
	return x, n, d
}
