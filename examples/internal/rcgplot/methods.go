package rcgplot

import (
	"fmt"
	"slices"
	"strings"

	"github.com/geovb/geovb/internal/repro/rcgexp"
)

// ParseMethods reads a comma-separated list of the mixture methods (rcgexp.MoGMethods; spaces allowed). An empty list,
// an unknown method or one named twice is an error that names it.
func ParseMethods(list string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(list, ",") {
		m := strings.TrimSpace(f)
		switch {
		case !slices.Contains(rcgexp.MoGMethods, m):
			return nil, fmt.Errorf("-methods %q: %q is not one of %v", list, m, rcgexp.MoGMethods)
		case slices.Contains(out, m):
			return nil, fmt.Errorf("-methods %q: %s named twice", list, m)
		}
		out = append(out, m)
	}
	return out, nil
}
