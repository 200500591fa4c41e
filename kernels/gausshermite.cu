// The Gauss–Hermite tanh moments and their reverse pass (backend/gausshermite.go; paper 004 §4.2.5): one thread per
// element of the batch × R × H block running the Q nodes, in place of the reference's 5Q (forward) and 7Q (reverse)
// element-wise launches. Element e = (b·R + i)·H + j sits at ptr + b·bs + i·rs + j in every R-row operand; node q's
// value at u + b·ubs + (q·R + i)·urs + j; the rule's nodes z_q and weights w_q at zw[q] and zw[zrs + q]. The sums run
// in node order from 0, as the reference's.
//
// Launch (both): block (256, 1, 1), no shared memory, grid min(ceil(n / 256), 2²⁰) in x with n = batch·R·H; a
// grid-stride loop covers the rest.

extern "C" __global__ void __launch_bounds__(256)
gh_tanh(double* m1, long long m1bs, long long m1rs, double* m2, long long m2bs, long long m2rs, double* u,
        long long ubs, long long urs, const double* y, long long ybs, long long yrs, const double* sd, long long sbs,
        long long srs, const double* zw, long long zrs, long long n, long long R, long long H, long long Q) {
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n;
         e += (long long)gridDim.x * blockDim.x) {
        long long j = e % H, r = e / H, i = r % R, b = r / R;
        double yv = y[b * ybs + i * yrs + j], sv = sd[b * sbs + i * srs + j];
        double* ue = u + b * ubs + i * urs + j;
        double a1 = 0, a2 = 0;
        for (long long q = 0; q < Q; q++) {
            double t = tanh(yv + zw[q] * sv);
            ue[q * R * urs] = t;
            double w = zw[zrs + q];
            a1 = w * t + a1;
            a2 = w * (t * t) + a2;
        }
        m1[b * m1bs + i * m1rs + j] = a1;
        m2[b * m2bs + i * m2rs + j] = a2;
    }
}

// gh_tanh_back: gy = Σ_q w_q (1 − u_q²)(gk·u_q + gm), gsum = Σ_q w_q z_q (1 − u_q²)(gk·u_q + gm).
extern "C" __global__ void __launch_bounds__(256)
gh_tanh_back(double* gy, long long gybs, long long gyrs, double* gs, long long gsbs, long long gsrs, const double* u,
             long long ubs, long long urs, const double* gk, long long kbs, long long krs, const double* gm,
             long long mbs, long long mrs, const double* zw, long long zrs, long long n, long long R, long long H,
             long long Q) {
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n;
         e += (long long)gridDim.x * blockDim.x) {
        long long j = e % H, r = e / H, i = r % R, b = r / R;
        double kv = gk[b * kbs + i * krs + j], mv = gm[b * mbs + i * mrs + j];
        const double* ue = u + b * ubs + i * urs + j;
        double a = 0, s = 0;
        for (long long q = 0; q < Q; q++) {
            double t = ue[q * R * urs];
            double d = (1 - t * t) * (kv * t + mv);
            double w = zw[zrs + q];
            a = w * d + a;
            s = (w * zw[q]) * d + s;
        }
        gy[b * gybs + i * gyrs + j] = a;
        gs[b * gsbs + i * gsrs + j] = s;
    }
}
