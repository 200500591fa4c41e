package vec

// softplusAVX2 and sigmoidAVX2 write n (a positive multiple of 4) values and report whether any argument was
// outside [−708, 708] or NaN (those lanes need the scalar function).
//
//go:noescape
func softplusAVX2(dst, src *float64, n int, alpha float64, consts *[34][4]uint64) bool

//go:noescape
func sigmoidAVX2(dst, src *float64, n int, alpha float64, consts *[34][4]uint64) bool
