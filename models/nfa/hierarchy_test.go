package nfa

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/geovb/geovb/rng"
)

// TestPriorCostMonteCarlo checks eq. (101), the expected cost of a Gaussian node under independent Gaussian q of the
// node γ, its mean m and its log-std v, against a Monte Carlo average of −log N(γ; m, e^{2v}) over 2·10⁶ draws
// (4 standard errors): E{−log p(γ)} = ½log 2π + v̄ + ½[(γ̄ − m̄)² + γ̃ + m̃]e^{2ṽ−2v̄}.
func TestPriorCostMonteCarlo(t *testing.T) {
	r := rand.New(rng.NewSource(5, 0))
	for _, c := range []struct{ g, gv, mm, mv, vm, vv float64 }{
		{0.3, 0.2, -0.4, 0.1, 0.2, 0.05}, {-2.1, 0.01, -2.3, 0.3, -1.5, 0.02}, {1, 1e-4, 0, 1e-4, 0, 1e-4}} {
		pr := prior{m: c.mm, mv: c.mv, c: 0.5*log2pi + c.vm, psi: math.Exp(2*c.vv - 2*c.vm)}
		want, _ := pr.cost(c.g, c.gv)
		const n = 2_000_000
		var s, s2 float64
		for range n {
			g := c.g + math.Sqrt(c.gv)*r.NormFloat64()
			m := c.mm + math.Sqrt(c.mv)*r.NormFloat64()
			v := c.vm + math.Sqrt(c.vv)*r.NormFloat64()
			d := (g - m) * math.Exp(-v)
			x := 0.5*log2pi + v + 0.5*d*d
			s += x
			s2 += x * x
		}
		mean := s / n
		se := math.Sqrt((s2/n - mean*mean) / n)
		t.Logf("%+v: eq. (101) %.6f, Monte Carlo %.6f ± %.1g", c, want, mean, se)
		if math.Abs(mean-want) > 4*se {
			t.Errorf("%+v: eq. (101) gives %v, Monte Carlo %v ± %v", c, want, mean, se)
		}
	}
}

// TestHierarchyUpdate checks the between-step update of the hierarchy's nodes, for NFA and NSSM with
// ARD: each group's children are collected here from the model's layout (biases a, b of f and c, d of g;
// the noise log-stds; the ARD log-stds of B, C, D), independently of the model's bookkeeping.
//   - After one hyperparameter stage, q(m) of each group is the closed form m̃ = 1/(Mψ + 10⁻⁴), m̄ = m̃ψΣγ̄ with the
//     ψ of the log-std node before the stage (1e-12), and central differences of F in v̄ and ṽ of the log-std node,
//     which is updated last, vanish (1e-6·M and 1e-6/ṽ).
//   - F never increases over 300 stages, after which the analytic gradient (checked against finite differences by
//     TestGradientsFiniteDifferences) of every node and of every child log-std vanishes: joint stationarity (1e-6).
//   - State and SetState carry the nodes: F is restored exactly.
func TestHierarchyUpdate(t *testing.T) {
	for _, dyn := range []bool{false, true} {
		m, x := smallModelCfg(t, 9, Config{Dynamic: dyn, D: 2, H: 3, HG: 3, Moments: GaussHermite, GHOrder: 8, ARD: true,
			Hierarchical: true}, 13)
		_, wf, wg := m.split(x)
		d, H, HG, P := m.Cfg.D, m.Cfg.H, m.Cfg.HG, m.P
		type kid struct{ mean, vr []float64 }
		kids := []kid{{wf[H*d : H*d+H], m.WVarF[H*d : H*d+H]}, {wf[H*d+H+P*H:], m.WVarF[H*d+H+P*H:]}}
		if dyn {
			kids = append(kids, kid{wg[HG*d : HG*d+HG], m.WVarG[HG*d : HG*d+HG]}, kid{wg[HG*d+HG+d*HG:], m.WVarG[HG*d+HG+d*HG:]})
		}
		kids = append(kids, kid{m.VnMean, m.VnVar})
		if dyn {
			kids = append(kids, kid{m.VmMean, m.VmVar})
		}
		kids = append(kids, kid{m.VPhiMean[:H], m.VPhiVar[:H]})
		if dyn {
			kids = append(kids, kid{m.VPhiMean[H : H+d], m.VPhiVar[H : H+d]}, kid{m.VPhiMean[H+d:], m.VPhiVar[H+d:]})
		}
		if len(kids) != len(m.GroupNames()) || 2*len(kids) != len(m.TopMean) {
			t.Fatalf("dynamic=%v: groups %v, want %d", dyn, m.GroupNames(), len(kids))
		}
		F0 := m.FreeEnergy(x)
		psi0 := make([]float64, len(kids))
		for k := range kids {
			psi0[k] = math.Exp(2*m.TopVar[2*k+1] - 2*m.TopMean[2*k+1])
		}
		m.updateHyper(x, true)
		F1 := m.FreeEnergy(x)
		if F1 > F0 {
			t.Errorf("dynamic=%v: hyperparameter stage raised F %v → %v", dyn, F0, F1)
		}
		fd := func(p *float64, h float64) float64 { return centralDiff(m, x, p, h) }
		for k, c := range kids {
			M := float64(len(c.mean))
			var sum float64
			for _, g := range c.mean {
				sum += g
			}
			mv := 1 / (M*psi0[k] + 1e-4)
			mm := mv * psi0[k] * sum
			if math.Abs(m.TopVar[2*k]-mv) > 1e-12*mv || math.Abs(m.TopMean[2*k]-mm) > 1e-12*math.Max(1, math.Abs(mm)) {
				t.Errorf("dynamic=%v group %s: q(m) = N(%v, %v), closed form N(%v, %v)", dyn, m.GroupNames()[k],
					m.TopMean[2*k], m.TopVar[2*k], mm, mv)
			}
			if g := fd(&m.TopMean[2*k+1], 1e-5); math.Abs(g) > 1e-6*M {
				t.Errorf("dynamic=%v group %s: FD ∂F/∂v̄ = %v", dyn, m.GroupNames()[k], g)
			}
			w := m.TopVar[2*k+1]
			if g := fd(&m.TopVar[2*k+1], 1e-5*w); math.Abs(g)*w > 1e-6 {
				t.Errorf("dynamic=%v group %s: FD ∂F/∂ṽ·ṽ = %v", dyn, m.GroupNames()[k], g*w)
			}
		}
		prev := F1
		for i := range 300 {
			m.FreeEnergy(x) // the squared-error sums the stage reads
			m.updateHyper(x, true)
			F := m.FreeEnergy(x)
			if F > prev+1e-12*math.Abs(prev) {
				t.Fatalf("dynamic=%v: stage %d raised F %v → %v", dyn, i, prev, F)
			}
			prev = F
		}
		gr := m.NewGrad()
		m.Gradient(gr, x)
		for i := range m.TopMean {
			if g, gv := gr.TopMean[i], gr.TopVar[i]*m.TopVar[i]; math.Abs(g) > 1e-6 || math.Abs(gv) > 1e-6 {
				t.Errorf("dynamic=%v node %d (%s): ∂F/∂mean = %v, ∂F/∂var·var = %v", dyn, i, m.GroupNames()[i/2], g, gv)
			}
		}
		for _, c := range []struct {
			name             string
			mean, vr, gm, gv []float64
		}{{"v_n", m.VnMean, m.VnVar, gr.VnMean, gr.VnVar}, {"v_m", m.VmMean, m.VmVar, gr.VmMean, gr.VmVar},
			{"v_Φ", m.VPhiMean, m.VPhiVar, gr.VPhiMean, gr.VPhiVar}} {
			for i := range c.mean {
				if g, gv := c.gm[i], c.gv[i]*c.vr[i]; math.Abs(g) > 1e-6 || math.Abs(gv) > 1e-6 {
					t.Errorf("dynamic=%v %s[%d]: ∂F/∂mean = %v, ∂F/∂var·var = %v", dyn, c.name, i, g, gv)
				}
			}
		}
		t.Logf("dynamic=%v: F %.6f → %.6f after one stage → %.6f after 300", dyn, F0, F1, prev)
		saved := m.State()
		Fs := m.FreeEnergy(x)
		for i := range m.TopMean {
			m.TopMean[i] += 0.1
		}
		if m.FreeEnergy(x) == Fs {
			t.Fatalf("dynamic=%v: F does not depend on the hierarchy's nodes", dyn)
		}
		if err := m.SetState(saved); err != nil {
			t.Fatal(err)
		}
		if F := m.FreeEnergy(x); F != Fs {
			t.Errorf("dynamic=%v: F after SetState %v, saved %v", dyn, F, Fs)
		}
	}
}

// TestNewtonLogStdPrior: the log-std update reaches the joint stationary point of its cost, M − S e^{2ṽ−2v̄} +
// ψ(v̄ − m) = 0 and ṽ(2S e^{2ṽ−2v̄} + ψ) = 1 (1e-9 relative), also when the prior is far from the children and much
// tighter than they are (ψ up to 10⁶, m 10 log-units away).
func TestNewtonLogStdPrior(t *testing.T) {
	for _, c := range []struct{ S, M, m, psi float64 }{
		{5, 20, 0, 1e-4}, {5, 20, 2, 1e4}, {20 * math.Exp(-10), 20, 0, 1e6}, {300 * math.Exp(8), 300, -2, 50},
		{1e-3, 3, 5, 1e2}} {
		v, w := 0.0, 1e-4
		newtonLogStd(c.S, c.M, prior{m: c.m, psi: c.psi}, &v, &w)
		e := c.S * math.Exp(2*w-2*v)
		scale := c.M + e + c.psi*math.Abs(v-c.m)
		if r := c.M - e + c.psi*(v-c.m); math.Abs(r) > 1e-9*scale {
			t.Errorf("%+v: v̄ = %v, ∂C/∂v̄ = %v", c, v, r)
		}
		if r := w*(2*e+c.psi) - 1; math.Abs(r) > 1e-9 {
			t.Errorf("%+v: ṽ = %v, ṽ(2Sψ + ψ_v) − 1 = %v", c, w, r)
		}
	}
}

// TestInitResetsHierarchy: Init puts the hierarchy's nodes back at their start, so runs of one model from Init are
// independent: the state and the means after Init(3) are the same bit for bit on a fresh model and on one whose
// nodes have moved.
func TestInitResetsHierarchy(t *testing.T) {
	for _, dyn := range []bool{false, true} {
		m, _ := smallModelCfg(t, 9, Config{Dynamic: dyn, D: 2, H: 3, HG: 3, Moments: GaussHermite, ARD: true,
			Hierarchical: true}, 17)
		fresh, err := m.Init(3)
		if err != nil {
			t.Fatal(err)
		}
		want := m.State()
		for i := range m.TopMean {
			m.TopMean[i] += 0.5
			m.TopVar[i] *= 3
		}
		again, err := m.Init(3)
		if err != nil {
			t.Fatal(err)
		}
		got := m.State()
		for _, c := range []struct {
			name      string
			got, want []float64
		}{{"state", got, want}, {"means", again, fresh}} {
			if len(c.got) != len(c.want) {
				t.Fatalf("dynamic=%v: %s of %d values, want %d", dyn, c.name, len(c.got), len(c.want))
			}
			for i := range c.got {
				if math.Float64bits(c.got[i]) != math.Float64bits(c.want[i]) {
					t.Fatalf("dynamic=%v: %s[%d] = %v after the nodes moved, %v before", dyn, c.name, i, c.got[i], c.want[i])
				}
			}
		}
	}
}

// TestHyperDelay checks Config.HyperDelay on NFA and NSSM with ARD and the hierarchy, from Init:
//   - with a delay of 3, the first 3 calls of Update leave the ARD log-stds and the hierarchy's nodes at their
//     initial bits while the noise log-stds move; the 4th call moves both;
//   - with a negative delay the first call moves them; the zero value waits DefaultHyperDelay calls for the NSSM
//     and none for NFA;
//   - the count travels with State: a model resumed by SetState after 2 calls and one run through without a break
//     hold the same state bit for bit after 6 calls.
func TestHyperDelay(t *testing.T) {
	for _, dyn := range []bool{false, true} {
		model := func(delay int) (*Model, []float64) {
			m, _ := smallModelCfg(t, 9, Config{Dynamic: dyn, D: 2, H: 3, HG: 3, Moments: GaussHermite, GHOrder: 8,
				ARD: true, Hierarchical: true, HyperDelay: delay}, 23)
			x, err := m.Init(5)
			if err != nil {
				t.Fatal(err)
			}
			return m, x
		}
		held := func(m *Model) []float64 { return slices.Concat(m.VPhiMean, m.VPhiVar, m.TopMean, m.TopVar) }
		update := func(m *Model, x []float64, n int) {
			for range n {
				if err := m.Update(x); err != nil {
					t.Fatal(err)
				}
			}
		}
		// movedAfter returns the first Update call (1-based) after which the held parameters differ from their
		// initial bits, looking at most limit calls ahead; 0 if they never moved.
		movedAfter := func(delay, limit int) int {
			m, x := model(delay)
			start, noise := held(m), slices.Clone(m.VnMean)
			for k := 1; k <= limit; k++ {
				update(m, x, 1)
				if !sameBits(held(m), start) {
					return k
				}
				if k == 1 && sameBits(m.VnMean, noise) {
					t.Errorf("dynamic=%v delay=%d: the noise log-stds did not move in the first update", dyn, delay)
				}
			}
			return 0
		}
		def := 1
		if dyn {
			def = DefaultHyperDelay + 1
		}
		for _, c := range []struct{ delay, limit, want int }{{3, 6, 4}, {-1, 3, 1}, {0, DefaultHyperDelay + 1, def}} {
			if got := movedAfter(c.delay, c.limit); got != c.want {
				t.Errorf("dynamic=%v delay=%d: priors first moved in update %d, want %d", dyn, c.delay, got, c.want)
			}
		}
		whole, x := model(3)
		update(whole, x, 6)
		first, x1 := model(3)
		update(first, x1, 2)
		resumed, x2 := model(3)
		if err := resumed.SetState(first.State()); err != nil {
			t.Fatal(err)
		}
		update(resumed, x2, 4)
		if !sameBits(resumed.State(), whole.State()) {
			t.Errorf("dynamic=%v: state after 2 + 4 updates across SetState differs from 6 in one run", dyn)
		}
	}
}
