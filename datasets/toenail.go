package datasets

import (
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// ToenailNames are the columns of the Toenail table as returned: patient id, y (1 = moderate or severe
// onycholysis), treatment (1 = terbinafine, 0 = itraconazole), time in months, visit number.
var ToenailNames = []string{"patientID", "y", "treatment", "time", "visit"}

var toenailHeader = []string{"rownames", "patientID", "outcome", "treatment", "time", "visit"}

// ReadToenailFile reads the Toenail file at path (see ReadToenail).
func ReadToenailFile(path string) (*Grouped, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadToenail(f, path)
}

// ReadToenail reads the Toenail data (De Backer et al. 1998; Rdatasets lme4/toenail, ../shared/data/toenail/
// toenail.csv): header rownames,patientID,outcome,treatment,time,visit; outcome "moderate or severe" or "none or
// mild" (also 1/0), treatment "terbinafine" or "itraconazole" (also 1/0). Rows of a patient must be contiguous
// (the ids need not be consecutive numbers). Missing values, an unknown outcome or treatment, a non-integer id,
// a patient id seen again after another patient, or treatment changing within a patient is a *ParseError with
// file, line and column.
func ReadToenail(r io.Reader, name string) (*Grouped, error) {
	g := &Grouped{Table: Table{Names: append([]string(nil), ToenailNames...)}}
	seen := map[int64]bool{}
	last := int64(-1)
	err := csvRows(r, name, toenailHeader, func(rec []string, pos func(int) (int, int)) error {
		at := func(j int, format string, args ...any) error {
			l, c := pos(j)
			return Errorf(name, l, c, format, args...)
		}
		for j, s := range rec {
			if isMissing([]byte(strings.TrimSpace(s))) {
				return at(j, "column %s: missing value %q", toenailHeader[j], s)
			}
		}
		id, err := strconv.ParseInt(strings.TrimSpace(rec[1]), 10, 64)
		if err != nil || id < 0 {
			return at(1, "patientID %q is not a non-negative integer", rec[1])
		}
		var y, trt float64
		switch strings.ToLower(strings.TrimSpace(rec[2])) {
		case "moderate or severe", "1":
			y = 1
		case "none or mild", "0":
			y = 0
		default:
			return at(2, "outcome %q, want \"moderate or severe\" or \"none or mild\" (binary response)", rec[2])
		}
		switch strings.ToLower(strings.TrimSpace(rec[3])) {
		case "terbinafine", "1":
			trt = 1
		case "itraconazole", "0":
			trt = 0
		default:
			return at(3, "treatment %q, want terbinafine or itraconazole", rec[3])
		}
		tm, err := parseFinite([]byte(strings.TrimSpace(rec[4])))
		if err != nil {
			return at(4, "time: %v", err)
		}
		vis, err := parseFinite([]byte(strings.TrimSpace(rec[5])))
		if err != nil || vis != math.Trunc(vis) {
			return at(5, "visit %q is not an integer", rec[5])
		}
		if id != last {
			if seen[id] {
				return at(1, "patientID %d appears again after other patients (groups must be contiguous)", id)
			}
			seen[id] = true
			last = id
			g.NumGroups++
		} else if prev := g.Rows[len(g.Rows)-1]; prev[2] != trt {
			return at(3, "treatment changes within patient %d", id)
		}
		g.Rows = append(g.Rows, []float64{float64(id), y, trt, tm, vis})
		g.Group = append(g.Group, g.NumGroups-1)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}
