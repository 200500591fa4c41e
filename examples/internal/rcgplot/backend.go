package rcgplot

import (
	"fmt"
	"io"

	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/all" // every backend compiled in
)

// OpenBackend opens the backend called name for the batched runs (backend.Open: "" reads $GEOVB_BACKEND, else
// auto) and says on log which one it got, so that the JSON lines' figures can be told apart by device.
func OpenBackend(name string, log io.Writer) (backend.Backend, error) {
	be, err := backend.Open(name)
	if err != nil {
		return nil, err
	}
	info := be.Info()
	fmt.Fprintf(log, "backend %s (%s, %s)\n", info.Name, info.Library, info.Device)
	return be, nil
}
