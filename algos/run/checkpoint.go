package run

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Checkpoint files: a magic line naming the format and version, then a gob stream of a header (the method and
// its state version) and the method's state value. Float64 values are stored exactly, so a resumed run continues
// bit for bit. Files are written to a temporary file beside the target and renamed into place.

const magic = "geovb-checkpoint v1\n"

// ErrCheckpoint is the cause of every error about a checkpoint file's contents.
var ErrCheckpoint = errors.New("bad checkpoint")

type header struct {
	Method  string
	Version int
}

// SaveCheckpoint writes state (any gob-encodable value) for method at version to path, atomically.
func SaveCheckpoint(path, method string, version int, state any) error {
	var buf bytes.Buffer
	buf.WriteString(magic)
	enc := gob.NewEncoder(&buf)
	if err := enc.Encode(header{method, version}); err != nil {
		return fmt.Errorf("run: encoding checkpoint header: %w", err)
	}
	if err := enc.Encode(state); err != nil {
		return fmt.Errorf("run: encoding %s checkpoint: %w", method, err)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("run: writing checkpoint: %w", err)
	}
	tmp := f.Name()
	if _, err = f.Write(buf.Bytes()); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("run: writing checkpoint %s: %w", path, err)
	}
	return nil
}

// LoadCheckpoint reads a checkpoint of method at version from path into state (a pointer). A file of another
// method or version, or a damaged file, gives an error wrapping ErrCheckpoint that names the file.
func LoadCheckpoint(path, method string, version int, state any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("run: reading checkpoint: %w", err)
	}
	return DecodeCheckpoint(path, data, method, version, state)
}

// DecodeCheckpoint is LoadCheckpoint on the bytes of a file; name is used in messages.
func DecodeCheckpoint(name string, data []byte, method string, version int, state any) error {
	if !bytes.HasPrefix(data, []byte(magic)) {
		return fmt.Errorf("run: %s: byte 0: not a geovb checkpoint (no %q line): %w", name, magic[:len(magic)-1], ErrCheckpoint)
	}
	r := bytes.NewReader(data[len(magic):])
	dec := gob.NewDecoder(r)
	offset := func() int64 { return int64(len(data)) - int64(r.Len()) }
	var h header
	if err := dec.Decode(&h); err != nil {
		return fmt.Errorf("run: %s: byte %d: header: %v: %w", name, offset(), err, ErrCheckpoint)
	}
	if h.Method != method || h.Version != version {
		return fmt.Errorf("run: %s: checkpoint of %s version %d, want %s version %d: %w", name, h.Method, h.Version, method, version, ErrCheckpoint)
	}
	if err := dec.Decode(state); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("run: %s: byte %d: truncated state: %w", name, offset(), ErrCheckpoint)
		}
		return fmt.Errorf("run: %s: byte %d: state: %v: %w", name, offset(), err, ErrCheckpoint)
	}
	return nil
}
