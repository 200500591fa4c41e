package vmf

import "math"

// logBesselISeries is the power series log Σ_m (x/2)^{2m+ν}/(m! Γ(m+ν+1)), summed in log space. It is exact up to
// rounding for any x but needs about x terms; it is the independent reference of the tests.
func logBesselISeries(nu, x float64) float64 {
	lg, _ := math.Lgamma(nu + 1)
	lx := math.Log(x / 2)
	first := nu*lx - lg // m = 0
	// Terms relative to the largest are summed; the ratio of consecutive terms is (x/2)²/((m+1)(m+ν+1)).
	q := x * x / 4
	logs := []float64{first}
	cur := first
	mx := first
	for m := 0; m < 1_000_000; m++ {
		cur += math.Log(q / (float64(m+1) * (float64(m) + nu + 1)))
		logs = append(logs, cur)
		if cur > mx {
			mx = cur
		}
		if cur < mx-80 && float64(m) > x {
			break
		}
	}
	sum := 0.0
	for _, l := range logs {
		sum += math.Exp(l - mx)
	}
	return mx + math.Log(sum)
}
