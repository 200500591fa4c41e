package vec

// scaleRows512 is ScaleRows for k ≤ 16 (rows ≥ 1): each row is two 8-lane registers under the masks m1, m2.
//
//go:noescape
func scaleRows512(x *float64, ldx int, s *float64, rows int, m1, m2 int)

// addScaledRows512 is AddScaledRows for k ≤ 16 (rows ≥ 1); m is read with stride minc (0: one value for all rows).
//
//go:noescape
func addScaledRows512(d *float64, ldd int, t *float64, ldt int, s, m *float64, minc int, rows int, m1, m2 int)
