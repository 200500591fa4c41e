package rcgplot

import (
	"slices"
	"strings"
	"testing"
)

// TestParseMethods checks the method lists: spaces are trimmed and the order kept; an empty list or entry, an
// unknown method and a repeated one are errors that name the entry.
func TestParseMethods(t *testing.T) {
	got, err := ParseMethods("RCG, VBEM,RG")
	if err != nil || !slices.Equal(got, []string{"RCG", "VBEM", "RG"}) {
		t.Errorf("ParseMethods: %v, %v", got, err)
	}
	for list, want := range map[string]string{"": `""`, "RCG,,RG": `""`, "RCG,Newton": "Newton", "RG,RCG,RG": "RG named twice"} {
		if _, err := ParseMethods(list); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseMethods(%q): error %v, want one naming %s", list, err, want)
		}
	}
}
