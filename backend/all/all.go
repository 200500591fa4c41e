// Package all registers every backend compiled into geovb with backend.Open. Programs import it for its side
// effect:
//
//	import _ "github.com/geovb/geovb/backend/all"
//
//	b, err := backend.Open("auto") // or "cpu", "cuda", or "" to read GEOVB_BACKEND
package all

import (
	_ "github.com/geovb/geovb/backend/cpu"
	_ "github.com/geovb/geovb/backend/cuda"
)
