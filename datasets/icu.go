package datasets

import (
	"bufio"
	"io"
	"os"
	"strings"
)

// ICUNames are the columns of the ICU study file (Hosmer & Lemeshow), in order.
var ICUNames = []string{"ID", "STA", "AGE", "SEX", "RACE", "SER", "CAN", "CRN", "INF", "CPR", "SYS", "HRA", "PRE",
	"TYP", "FRA", "PO2", "PH", "PCO", "BIC", "CRE", "LOC"}

// ReadICUFile reads the ICU file at path (see ReadICU).
func ReadICUFile(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadICU(f, path)
}

// ReadICU reads icu.csv (../shared/data/README.md): a header naming the 21 columns of ICUNames (quoted or not),
// then comma-separated rows of finite numbers. STA and the 0/1 covariates must be 0 or 1, RACE 1–3 and LOC 0–2.
// A missing value, a wrong header or field count, or a code outside its range is a *ParseError naming file, line
// and column. Blank lines are skipped.
func ReadICU(r io.Reader, name string) (*Table, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	t := &Table{}
	line := 0
	binary := map[string]bool{"STA": true, "SEX": true, "SER": true, "CAN": true, "CRN": true, "INF": true,
		"CPR": true, "PRE": true, "TYP": true, "FRA": true, "PO2": true, "PH": true, "PCO": true, "BIC": true, "CRE": true}
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" {
			continue
		}
		parts := strings.Split(text, ",")
		cols := make([]int, len(parts))
		c := 1
		for i, p := range parts {
			cols[i] = c
			c += len(p) + 1
		}
		if t.Names == nil {
			for i, p := range parts {
				n := strings.Trim(strings.TrimSpace(p), `"`)
				if i >= len(ICUNames) || n != ICUNames[i] {
					return nil, Errorf(name, line, cols[i], "header field %d is %q, want %q", i+1, p, strings.Join(ICUNames, ","))
				}
				t.Names = append(t.Names, n)
			}
			if len(parts) != len(ICUNames) {
				return nil, Errorf(name, line, 0, "header has %d names, want %d", len(parts), len(ICUNames))
			}
			continue
		}
		if len(parts) != len(ICUNames) {
			col := c
			if len(parts) > len(ICUNames) {
				col = cols[len(ICUNames)]
			}
			return nil, Errorf(name, line, col, "%d fields, want %d", len(parts), len(ICUNames))
		}
		row := make([]float64, len(parts))
		for j, p := range parts {
			v, err := parseFinite([]byte(strings.TrimSpace(p)))
			if err != nil {
				return nil, Errorf(name, line, cols[j], "%s: %v", ICUNames[j], err)
			}
			n := ICUNames[j]
			switch {
			case binary[n] && v != 0 && v != 1:
				return nil, Errorf(name, line, cols[j], "%s = %v, want 0 or 1", n, v)
			case n == "RACE" && v != 1 && v != 2 && v != 3:
				return nil, Errorf(name, line, cols[j], "RACE = %v, want 1, 2 or 3", v)
			case n == "LOC" && v != 0 && v != 1 && v != 2:
				return nil, Errorf(name, line, cols[j], "LOC = %v, want 0, 1 or 2", v)
			}
			row[j] = v
		}
		t.Rows = append(t.Rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, Errorf(name, line+1, 0, "%v", err)
	}
	if t.Names == nil || len(t.Rows) == 0 {
		return nil, Errorf(name, max(line, 1), 0, "no data rows")
	}
	return t, nil
}
