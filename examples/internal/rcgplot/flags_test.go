package rcgplot

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestFlagChecks checks the mixture examples' flag checks: each rejects the values out of range, naming the flag
// and the value, and accepts the edge of the range.
func TestFlagChecks(t *testing.T) {
	spacings := func(list string) error { _, err := ParseSpacings(list); return err }
	for _, c := range []struct {
		err  error
		want string
	}{
		{CheckSeeds(0), "-seeds 0"}, {CheckSeeds(-2), "-seeds -2"},
		{CheckSpacing(0), "-r 0"}, {CheckSpacing(-0.3), "-r -0.3"}, {CheckSpacing(math.NaN()), "-r NaN"},
		{CheckSpacing(math.Inf(1)), "-r +Inf"},
		{spacings("0.1,x"), `-r "0.1,x"`}, {spacings("0.1, 0"), "-r 0"},
		{CheckNonNegative("cap", -1), "-cap -1"}, {CheckNonNegative("cap", math.NaN()), "-cap NaN"},
		{CheckNonNegative("eps", math.Inf(1)), "-eps +Inf"}, {CheckLimit(-time.Second), "-limit -1s"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("error %v, want one naming %s", c.err, c.want)
		}
	}
	for name, err := range map[string]error{"seeds 1": CheckSeeds(1), "r 1e-9": CheckSpacing(1e-9),
		"cap 0": CheckNonNegative("cap", 0), "limit 0": CheckLimit(0)} {
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if rs, err := ParseSpacings("0.1, 0.25"); err != nil || !slices.Equal(rs, []float64{0.1, 0.25}) {
		t.Errorf("ParseSpacings: %v, %v", rs, err)
	}
}
