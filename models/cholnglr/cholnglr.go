// Package cholnglr is the Bayesian logistic regression of paper 003 §8.1 with the data codings that
// reproduce Table 5: German credit (d = 49), Heart (d = 19) and ICU (d = 20). Prior θ ~ N(0, 10² I); the log joint
// keeps every constant (L̂ matches the paper only with −(d/2)log(2πσ₀²)).
package cholnglr

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/geovb/geovb/datasets"
)

// Model is y_i ~ Bernoulli(σ(x_iᵀθ)), θ ~ N(0, Sigma0² I). X is N×D row-major.
type Model struct {
	N, D   int
	X, Y   []float64
	Sigma0 float64
	Names  []string
}

// Dim returns D.
func (m *Model) Dim() int { return m.D }

// LogJoint returns log p(y, θ) = yᵀXθ − Σ log(1 + e^{η}) − (d/2)log(2πσ₀²) − θᵀθ/(2σ₀²) and its gradient
// Xᵀ(y − π) − θ/σ₀², with log(1+e^η) evaluated stably (η + log1p(e^{−η}) for η > 0).
func (m *Model) LogJoint(th, grad []float64) float64 {
	s2 := m.Sigma0 * m.Sigma0
	lp := -0.5 * float64(m.D) * math.Log(2*math.Pi*s2)
	for j := range grad {
		grad[j] = -th[j] / s2
		lp -= th[j] * th[j] / (2 * s2)
	}
	for i := 0; i < m.N; i++ {
		x := m.X[i*m.D : (i+1)*m.D]
		eta := 0.0
		for j, v := range x {
			eta += v * th[j]
		}
		var sp, p float64
		if eta > 0 {
			e := math.Exp(-eta)
			sp, p = eta+math.Log1p(e), 1/(1+e)
		} else {
			e := math.Exp(eta)
			sp, p = math.Log1p(e), e/(1+e)
		}
		lp += m.Y[i]*eta - sp
		r := m.Y[i] - p
		for j, v := range x {
			grad[j] += r * v
		}
	}
	return lp
}

// LogDensity implements model.Density: LogJoint with the gradient first.
func (m *Model) LogDensity(grad, th []float64) (float64, error) { return m.LogJoint(th, grad), nil }

// builder assembles a design column by column.
type builder struct {
	n     int
	cols  [][]float64
	names []string
}

func (b *builder) add(name string, c []float64) {
	b.cols = append(b.cols, c)
	b.names = append(b.names, name)
}

// std adds a column standardised with the sample sd (§8.1). The column is first divided by its largest
// magnitude, which leaves the standardised values as they are but keeps the sums finite for any finite input; a
// constant column, or a single row, has no sd and is only centred.
func (b *builder) std(name string, c []float64) {
	n := float64(len(c))
	scale := 0.0
	for _, v := range c {
		scale = math.Max(scale, math.Abs(v))
	}
	if scale == 0 {
		scale = 1
	}
	mean, ss := 0.0, 0.0
	for _, v := range c {
		mean += v / scale
	}
	mean /= n
	for _, v := range c {
		ss += (v/scale - mean) * (v/scale - mean)
	}
	sd := 1.0
	if len(c) > 1 && ss > 0 {
		sd = math.Sqrt(ss / (n - 1))
	}
	out := make([]float64, len(c))
	for i, v := range c {
		out[i] = (v/scale - mean) / sd
	}
	b.add(name, out)
}

// dummies adds one 0/1 column per level present except the first (lexicographically smallest, or numerically for
// numeric levels) reference level.
func (b *builder) dummies(name string, c []string, numeric bool) {
	set := map[string]bool{}
	for _, v := range c {
		set[v] = true
	}
	var lv []string
	for k := range set {
		lv = append(lv, k)
	}
	sort.Slice(lv, func(i, j int) bool {
		if numeric {
			a, _ := strconv.ParseFloat(lv[i], 64)
			bb, _ := strconv.ParseFloat(lv[j], 64)
			return a < bb
		}
		return lv[i] < lv[j]
	})
	for _, l := range lv[1:] {
		out := make([]float64, len(c))
		for i, v := range c {
			if v == l {
				out[i] = 1
			}
		}
		b.add(name+"="+l, out)
	}
}

func (b *builder) model(y []float64) *Model {
	n, d := len(y), len(b.cols)+1
	x := make([]float64, n*d)
	for i := 0; i < n; i++ {
		x[i*d] = 1
		for j, c := range b.cols {
			x[i*d+j+1] = c[i]
		}
	}
	return &Model{N: n, D: d, X: x, Y: y, Sigma0: 10, Names: append([]string{"intercept"}, b.names...)}
}

func col(t *datasets.Table, j int) []float64 {
	out := make([]float64, len(t.Rows))
	for i, r := range t.Rows {
		out[i] = r[j]
	}
	return out
}

func scol(t *datasets.Table, j int) []string {
	out := make([]string, len(t.Rows))
	for i, r := range t.Rows {
		out[i] = strconv.FormatFloat(r[j], 'g', -1, 64)
	}
	return out
}

// Heart builds the Heart design (§8.1, d = 19): intercept; age, resting BP, cholesterol, max heart rate,
// oldpeak, major vessels standardised; sex, fasting blood sugar, angina 0/1; dummies for chest pain, resting ECG,
// slope and thal; y = class − 1.
func Heart(t *datasets.Table) *Model {
	var b builder
	for _, j := range []int{0, 3, 4, 7, 9, 11} {
		b.std(t.Names[j], col(t, j))
	}
	for _, j := range []int{1, 5, 8} {
		b.add(t.Names[j], col(t, j))
	}
	for _, j := range []int{2, 6, 10, 12} {
		b.dummies(t.Names[j], scol(t, j), true)
	}
	y := col(t, 13)
	for i := range y {
		y[i]--
	}
	return b.model(y)
}

// ICU builds the ICU design (§8.1, d = 20): intercept; AGE, SYS, HRA standardised; the 0/1 covariates as
// given; RACE = 1 if white (code 1) and LOC = 1 if no coma/stupor (code 0), the coding that reproduces the paper's
// diagonal L̂; y = STA.
func ICU(t *datasets.Table) *Model {
	var b builder
	idx := map[string]int{}
	for j, n := range t.Names {
		idx[n] = j
	}
	for _, n := range []string{"AGE", "SYS", "HRA"} {
		b.std(n, col(t, idx[n]))
	}
	for _, n := range []string{"SEX", "SER", "CAN", "CRN", "INF", "CPR", "PRE", "TYP", "FRA", "PO2", "PH", "PCO", "BIC", "CRE"} {
		b.add(n, col(t, idx[n]))
	}
	race, loc := col(t, idx["RACE"]), col(t, idx["LOC"])
	for i := range race {
		race[i] = b2f(race[i] == 1)
		loc[i] = b2f(loc[i] == 0)
	}
	b.add("RACE=white", race)
	b.add("LOC=no-coma", loc)
	return b.model(col(t, idx["STA"]))
}

func b2f(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

// GermanFile builds the German credit design from the categorical UCI file german.data at path (see German).
func GermanFile(path string) (*Model, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return German(f, path)
}

// German builds the paper-003 coding of the categorical German credit file (§8.1, d = 49): the 7 numeric
// attributes standardised, the 13 categorical ones dummy coded with the first level present as reference. The
// numeric file read by datasets.ReadGerman (paper 000's coding) cannot give this coding, so the categorical file is
// parsed here: an optional header line, then 21 fields per row (20 attributes, class 1 = good / 0 or 2 = bad).
// Errors are *datasets.ParseError with file, line and column.
func German(r io.Reader, name string) (*Model, error) {
	numeric := map[int]bool{1: true, 4: true, 7: true, 10: true, 12: true, 15: true, 17: true}
	sc := bufio.NewScanner(r)
	var rows [][]string
	var cols [][]int
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		if len(rows) == 0 && strings.HasPrefix(f[0], "STATUS") {
			continue
		}
		if len(f) != 21 {
			return nil, datasets.Errorf(name, line, 0, "%d fields, want 21 (20 attributes and the class)", len(f))
		}
		pos := make([]int, 21)
		off := 0
		for j, s := range f {
			k := strings.Index(text[off:], s)
			pos[j] = off + k + 1
			off += k + len(s)
			if numeric[j] || j == 20 {
				v, err := strconv.ParseFloat(s, 64)
				if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, datasets.Errorf(name, line, pos[j], "attribute %d: %q is not a finite number", j+1, s)
				}
				if j == 20 && v != 0 && v != 1 && v != 2 {
					return nil, datasets.Errorf(name, line, pos[j], "class %q, want 1 (good) or 0/2 (bad)", s)
				}
			} else if len(s) < 2 || s[0] != 'A' {
				return nil, datasets.Errorf(name, line, pos[j], "attribute %d: %q is not a category code A…", j+1, s)
			}
		}
		rows, cols = append(rows, f), append(cols, pos)
	}
	if len(rows) == 0 {
		return nil, datasets.Errorf(name, max(line, 1), 0, "no data rows")
	}
	var b builder
	get := func(j int) []string {
		out := make([]string, len(rows))
		for i, r := range rows {
			out[i] = r[j]
		}
		return out
	}
	for j := 0; j < 20; j++ {
		if numeric[j] {
			c := make([]float64, len(rows))
			for i, r := range rows {
				c[i], _ = strconv.ParseFloat(r[j], 64)
			}
			b.std(fmt.Sprintf("attr%d", j+1), c)
		}
	}
	for j := 0; j < 20; j++ {
		if !numeric[j] {
			b.dummies(fmt.Sprintf("attr%d", j+1), get(j), false)
		}
	}
	y := make([]float64, len(rows))
	for i, r := range rows {
		y[i] = b2f(r[20] == "1")
	}
	return b.model(y), nil
}
