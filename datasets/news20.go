package datasets

import (
	"bufio"
	"bytes"
	"io"
	"math"
	"os"
	"strconv"
)

// Corpus is a set of sparse documents over a vocabulary of V words in CSR form: document d has word ids
// Idx[Ptr[d]:Ptr[d+1]] (strictly increasing) with weights Val[Ptr[d]:Ptr[d+1]] (the 20News-diff tf-idf vectors of
// paper 001 Section 5.3, L2-normalised by the data's authors).
type Corpus struct {
	V      int
	Ptr    []int
	Idx    []int32
	Val    []float64
	Label  []int
	Labels int // the trailer line (number of labels), 0 when absent
}

// Docs returns the number of documents.
func (c *Corpus) Docs() int { return len(c.Ptr) - 1 }

// Doc returns the ids and weights of document d (views into the corpus).
func (c *Corpus) Doc(d int) ([]int32, []float64) {
	return c.Idx[c.Ptr[d]:c.Ptr[d+1]], c.Val[c.Ptr[d]:c.Ptr[d+1]]
}

// ReadNews20File reads a 20News-diff data file (see ReadNews20).
func ReadNews20File(path string) (*Corpus, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadNews20(f, path)
}

// ReadNews20 reads the sparse format of the 20News-diff set (../shared/data/README.md): a header line "V D", then
// D lines "n y id:val …" with n pairs, 0 ≤ id < V strictly increasing, finite val, then an optional trailer line
// holding the number of labels. Every problem — a missing or extra field, a bad number, an out-of-range or repeated
// word id, a non-finite weight, an empty document, a document count that disagrees with the header — is a
// *ParseError naming file, line and column (1-based, in bytes). The vectors are used as stored (not renormalised: each
// document is exactly unit-norm as written).
func ReadNews20(r io.Reader, name string) (*Corpus, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<26)
	line := 0
	next := func() ([]byte, bool) {
		for sc.Scan() {
			line++
			return sc.Bytes(), true
		}
		return nil, false
	}
	hdr, ok := next()
	if !ok {
		if err := sc.Err(); err != nil {
			return nil, Errorf(name, 1, 0, "%v", err)
		}
		return nil, Errorf(name, 1, 0, "empty file: want a header line \"V D\"")
	}
	f := fields(hdr)
	if len(f) != 2 {
		return nil, Errorf(name, line, 1, "header has %d fields, want \"V D\"", len(f))
	}
	V, err := posInt(f[0].s, 1<<30)
	if err != nil {
		return nil, Errorf(name, line, f[0].col, "vocabulary size %q: %v", f[0].s, err)
	}
	D, err := posInt(f[1].s, 1<<30)
	if err != nil {
		return nil, Errorf(name, line, f[1].col, "document count %q: %v", f[1].s, err)
	}
	c := &Corpus{V: V, Ptr: make([]int, 1, min(D, 1<<20)+1)}
	for d := 0; d < D; d++ {
		b, ok := next()
		if !ok {
			if err := sc.Err(); err != nil {
				return nil, Errorf(name, line+1, 0, "%v", err)
			}
			return nil, Errorf(name, line+1, 0, "file ends after %d of %d documents", d, D)
		}
		f := fields(b)
		if len(f) < 2 {
			return nil, Errorf(name, line, 1, "document %d: want \"n label id:val ...\", got %d fields", d, len(f))
		}
		n, err := posInt(f[0].s, 1<<30)
		if err != nil {
			return nil, Errorf(name, line, f[0].col, "document %d: word count %q: %v (an empty document is an error)", d, f[0].s, err)
		}
		lab, err := strconv.Atoi(string(f[1].s))
		if err != nil {
			return nil, Errorf(name, line, f[1].col, "document %d: label %q is not an integer", d, f[1].s)
		}
		if len(f)-2 != n {
			return nil, Errorf(name, line, 1, "document %d: word count %d but %d id:val pairs", d, n, len(f)-2)
		}
		prev := -1
		for _, p := range f[2:] {
			k := bytes.IndexByte(p.s, ':')
			if k < 0 {
				return nil, Errorf(name, line, p.col, "document %d: %q is not id:val", d, p.s)
			}
			id, err := strconv.Atoi(string(p.s[:k]))
			if err != nil || id < 0 || id >= V {
				return nil, Errorf(name, line, p.col, "document %d: word id %q out of range [0, %d)", d, p.s[:k], V)
			}
			if id <= prev {
				return nil, Errorf(name, line, p.col, "document %d: word id %d not after %d (ids must increase)", d, id, prev)
			}
			prev = id
			v, err := strconv.ParseFloat(string(p.s[k+1:]), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, Errorf(name, line, p.col+k+1, "document %d: weight %q is not a finite number", d, p.s[k+1:])
			}
			c.Idx = append(c.Idx, int32(id))
			c.Val = append(c.Val, v)
		}
		c.Ptr = append(c.Ptr, len(c.Idx))
		c.Label = append(c.Label, lab)
	}
	// Optional trailer: the number of labels; then nothing but blank lines.
	for {
		b, ok := next()
		if !ok {
			break
		}
		f := fields(b)
		if len(f) == 0 {
			continue
		}
		if c.Labels != 0 || len(f) != 1 {
			return nil, Errorf(name, line, f[0].col, "unexpected content after %d documents", D)
		}
		if c.Labels, err = posInt(f[0].s, 1<<20); err != nil {
			return nil, Errorf(name, line, f[0].col, "label count %q: %v", f[0].s, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, Errorf(name, line+1, 0, "%v", err)
	}
	return c, nil
}

type field struct {
	s   []byte
	col int
}

// fields splits b at spaces and tabs, keeping 1-based byte columns.
func fields(b []byte) []field {
	var out []field
	i := 0
	for i < len(b) {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r') {
			i++
		}
		j := i
		for j < len(b) && b[j] != ' ' && b[j] != '\t' && b[j] != '\r' {
			j++
		}
		if j > i {
			out = append(out, field{b[i:j], i + 1})
		}
		i = j
	}
	return out
}

type rangeErr string

func (e rangeErr) Error() string { return string(e) }

// posInt parses a positive integer no larger than max.
func posInt(s []byte, max int) (int, error) {
	v, err := strconv.Atoi(string(s))
	if err != nil {
		return 0, rangeErr("not an integer")
	}
	if v < 1 || v > max {
		return 0, rangeErr("out of range [1, " + strconv.Itoa(max) + "]")
	}
	return v, nil
}
