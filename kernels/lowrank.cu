// Element-wise kernels of the low-rank-plus-diagonal algebra of paper 002 (backend/lowrank.go, notes §2.4, §2.8,
// §5.7). The d×p by p×k products run on cuBLAS (kernel_lowrank.go); these kernels carry the diagonal scalings, the
// ψ update and the small p×p bookkeeping between the products, so that W is read the fewest times the algebra
// allows. Matrices of the p×p stage are column-major with leading dimension p (cuBLAS's convention); the d-row
// operands are row-major with a row stride, as the tensors are. Row i of the d×1 vector ψ is psi[i·pinc].

#define LR_THREADS 256

// lr_warp_sum returns the sum of v over the warp, the bitwise same value in every lane (butterfly).
__device__ __forceinline__ double lr_warp_sum(double v) {
#pragma unroll
    for (int m = 16; m >= 1; m >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, m);
    }
    return v;
}

// lr_scale_rows: out[i, c] = in[i, c]·(1/ψ_i) for rows × k (t = g ⊘ ψ of the Woodbury solve, notes §5.7). out may
// alias in. Launch: block (256, 1, 1), grid (min(ceil(rows·k / 256), 2²⁰), 1, 1), no shared memory.
extern "C" __global__ void __launch_bounds__(LR_THREADS)
    lr_scale_rows(double* out, long long ors, const double* in, long long irs, const double* psi, long long pinc,
                  long long rows, long long k) {
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < rows * k; e += step) {
        const long long i = e / k;
        const long long c = e - i * k;
        const double f = 1 / psi[i * pinc];
        out[i * ors + c] = in[i * irs + c] * f;
    }
}

// lr_solve_epilogue: dst[i, c] = (g[i, c] − s[i, c])·(1/ψ_i), the last step of the Woodbury solve with s = W v
// (notes §5.7). The pointers are at the first row of a chunk of rows. dst may alias g. Launch as lr_scale_rows.
extern "C" __global__ void __launch_bounds__(LR_THREADS)
    lr_solve_epilogue(double* dst, long long drs, const double* g, long long grs, const double* s, long long srs,
                      const double* psi, long long pinc, long long rows, long long k) {
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < rows * k; e += step) {
        const long long i = e / k;
        const long long c = e - i * k;
        const double f = 1 / psi[i * pinc];
        dst[i * drs + c] = (g[i * grs + c] - s[i * srs + c]) * f;
    }
}

// lr_sample_epilogue: dst[i, c] += s[i, c]·(1/ψ_i) + μ_i (μ null: 0), the last step of the ensemble sampler
// x⁺ = x + Ψ⁻¹ W M⁻¹(ε − Wᵀx), θ = μ + x⁺ (paper 002 Prop. 1 corrected, notes §2.8) with s = W M⁻¹(ε − Wᵀx). The
// pointers are at the first row of a chunk of rows. Launch as lr_scale_rows.
extern "C" __global__ void __launch_bounds__(LR_THREADS)
    lr_sample_epilogue(double* dst, long long drs, const double* s, long long srs, const double* psi, long long pinc,
                       const double* mu, long long minc, long long rows, long long k) {
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < rows * k; e += step) {
        const long long i = e / k;
        const long long c = e - i * k;
        const double f = 1 / psi[i * pinc];
        const double m = mu == 0 ? 0.0 : mu[i * minc];
        dst[i * drs + c] += s[i * srs + c] * f + m;
    }
}

// lr_em_pass1 is the element-wise part of the first pass of the recursive EM step (Algorithm 1, first inner
// iteration, notes §2.4): for each row i, with f = 1/√ψ_i,
//   A[i, 0:p] = f·W[i, :],  A[i, p:p+kc] = f·X[i, :]   (A = Ψ^{-1/2}[W | X], d × (p + kc), row stride lda),
//   sd[i] = α(‖W[i, :]‖² + ψ_i) + β‖X[i, :]‖²          (diag S_t; the X term only when kc > 0),
// and blockmax[blockIdx.x] = the largest sd of the block's rows (0 when it has none), for the default ψ floor.
// AᵀA then gives M − I = WᵀΨ⁻¹W and Y = XᵀΨ⁻¹W in one GEMM. One warp per row.
// Launch: block (256, 1, 1), grid (min(ceil(d / 8), 1024), 1, 1) (a grid-stride loop covers the rest; blockmax has
// one entry per block), no dynamic shared memory.
extern "C" __global__ void __launch_bounds__(LR_THREADS)
    lr_em_pass1(double* A, long long lda, const double* W, long long wrs, const double* X, long long xrs,
                const double* psi, long long pinc, double* sd, double* blockmax, double alpha, double beta,
                long long d, long long p, long long kc) {
    __shared__ double wmax[LR_THREADS / 32];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const long long step = (long long)gridDim.x * (LR_THREADS / 32);
    double mx = 0;
    for (long long i = (long long)blockIdx.x * (LR_THREADS / 32) + warp; i < d; i += step) {
        const double ps = psi[i * pinc];
        const double f = 1 / sqrt(ps);
        const double* wr = W + i * wrs;
        double* ar = A + i * lda;
        double ww = 0;
        for (long long j = lane; j < p; j += 32) {
            const double w = wr[j];
            ar[j] = w * f;
            ww += w * w;
        }
        double xx = 0;
        for (long long c = lane; c < kc; c += 32) {
            const double x = X[i * xrs + c];
            ar[p + c] = x * f;
            xx += x * x;
        }
        ww = lr_warp_sum(ww);
        xx = lr_warp_sum(xx);
        double s = alpha * (ww + ps);
        if (kc > 0) {
            s += beta * xx;
        }
        if (lane == 0) {
            sd[i] = s;
        }
        mx = fmax(mx, s);
    }
    if (lane == 0) {
        wmax[warp] = mx;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        double m = wmax[0];
        for (int w = 1; w < LR_THREADS / 32; w++) {
            m = fmax(m, wmax[w]);
        }
        blockmax[blockIdx.x] = m;
    }
}

// lr_em_floor writes the ψ floor of the step into *floor_out: given when given > 0, else
// max(tiny, rel·max diag S_t) (notes §5.2b) from the nb block maxima of lr_em_pass1.
// Launch: block (1, 1, 1), grid (1, 1, 1), no shared memory.
extern "C" __global__ void lr_em_floor(const double* blockmax, long long nb, double given, double rel, double tiny,
                                       double* floor_out) {
    if (given > 0) {
        *floor_out = given;
        return;
    }
    double m = 0;
    for (long long b = 0; b < nb; b++) {
        m = fmax(m, blockmax[b]);
    }
    *floor_out = fmax(tiny, rel * m);
}

// lr_em_prep reads M − I from the Gram matrix G = AᵀA (column-major, leading dimension lg; its lower triangle, so
// that the copy is exactly symmetric) into mi (p×p, ld p) and sets mb = α(M − I), ready for the GEMM
// mb += α(M − I)(M − I) that makes B = α(M − I)M of the first iteration (notes §2.4).
// Launch: block (256, 1, 1), grid (min(ceil(p² / 256), 2²⁰), 1, 1) (grid-stride), no shared memory.
extern "C" __global__ void __launch_bounds__(LR_THREADS)
    lr_em_prep(const double* G, long long lg, double* mi, double* mb, long long p, double alpha) {
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < p * p; e += step) {
        const long long j = e / p;
        const long long i = e - j * p;
        const double g = i >= j ? G[j * lg + i] : G[i * lg + j];
        mi[e] = g;
        mb[e] = alpha * g;
    }
}

// lr_em_prep2 finishes the p×p stage before the Cholesky factorisation: with M = (M − I) + I and mb = B,
//   r = ((M + B) + (M + B)ᵀ)/2                   (p×p, ld p: the SPD matrix M + B, symmetrised),
//   nrhs = [M | αM | βYᵀ]                         (p × (2p + kc), ld p; Y (kc×p) is G's block below row p),
// so that one triangular solve with the Cholesky factor R of M + B gives [R⁻¹M | R⁻¹αM | R⁻¹βYᵀ] =
// [K₂ | K₁ᵀ | Y₁ᵀ], the three small factors of the second pass (K₂ = R⁻¹M, K₁ = αMR⁻ᵀ, Y₁ = βYR⁻ᵀ).
// Launch: block (256, 1, 1), grid (min(ceil(p·(2p + kc) / 256), 2²⁰), 1, 1) (grid-stride), no shared memory.
extern "C" __global__ void __launch_bounds__(LR_THREADS)
    lr_em_prep2(const double* mi, const double* mb, const double* G, long long lg, double* r, double* nrhs,
                long long p, long long kc, double alpha, double beta) {
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < p * (2 * p + kc); e += step) {
        const long long j = e / p; // column of nrhs
        const long long i = e - j * p;
        if (j < p) {
            const double mij = mi[j * p + i] + (i == j ? 1.0 : 0.0);
            const double mji = mi[i * p + j] + (i == j ? 1.0 : 0.0);
            r[e] = 0.5 * ((mb[j * p + i] + mij) + (mb[i * p + j] + mji));
            nrhs[e] = mij;
        } else if (j < 2 * p) {
            const long long jj = j - p;
            nrhs[e] = alpha * (mi[jj * p + i] + (i == jj ? 1.0 : 0.0));
        } else {
            const long long c = j - 2 * p;
            nrhs[e] = beta * G[i * lg + p + c];
        }
    }
}

// lr_em_check sets *status to 1 when the Cholesky factorisation of M + B failed (info ≠ 0) or its factor (lower
// triangle of r, p×p, ld p) has a diagonal entry that is not finite and positive (NaN in W, ψ or X), else 0.
// Launch: block (1, 1, 1), grid (1, 1, 1), no shared memory.
extern "C" __global__ void lr_em_check(const double* r, long long p, const int* info, int* status) {
    int bad = *info != 0;
    for (long long i = 0; i < p; i++) {
        const double d = r[i * p + i];
        if (!(d > 0) || isinf(d)) {
            bad = 1;
        }
    }
    *status = bad;
}

// lr_em_epilogue finishes a chunk of rows of the second pass. h holds Ĥ = Ψ^{-1/2}H for the chunk (rows × p,
// contiguous), H = V R⁻ᵀ; with h_i = √ψ_i ĥ_i (written back in place) it sets ψ_i ← s_i − ‖h_i‖² ((21) of
// Algorithm 1: ψ_new = s − rowdot(G, V) = s − ‖h_i‖², notes §2.4), raised to *floorp when below it; clamped counts
// the raised entries. psi and sd point at the chunk's first row. One warp per row.
// Launch: block (256, 1, 1), grid (min(ceil(rows / 8), 2²⁰), 1, 1), no shared memory.
extern "C" __global__ void __launch_bounds__(LR_THREADS)
    lr_em_epilogue(double* h, long long p, double* psi, long long pinc, const double* sd, const double* floorp,
                   int* clamped, long long rows) {
    const int lane = threadIdx.x & 31;
    const long long step = (long long)gridDim.x * (LR_THREADS / 32);
    const double floor = *floorp;
    for (long long i = (long long)blockIdx.x * (LR_THREADS / 32) + (threadIdx.x >> 5); i < rows; i += step) {
        const double sq = sqrt(psi[i * pinc]);
        double* hr = h + i * p;
        double ss = 0;
        for (long long j = lane; j < p; j += 32) {
            const double v = hr[j] * sq;
            hr[j] = v;
            ss += v * v;
        }
        ss = lr_warp_sum(ss);
        if (lane == 0) {
            double v = sd[i] - ss;
            if (v < floor) {
                v = floor;
                atomicAdd(clamped, 1);
            }
            psi[i * pinc] = v;
        }
    }
}

// lr_cap_scale: s[i, c] = w[i, c]·(1/√ψ_i) for a chunk of rows × p, into the contiguous s (the reference's
// Ψ^{-1/2}W, notes §1). Launch: block (256, 1, 1), grid (min(ceil(rows·p / 256), 2²⁰), 1, 1), no shared memory.
extern "C" __global__ void __launch_bounds__(LR_THREADS)
    lr_cap_scale(double* s, const double* w, long long wrs, const double* psi, long long pinc, long long rows,
                 long long p) {
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < rows * p; e += step) {
        const long long i = e / p;
        const double f = 1 / sqrt(psi[i * pinc]);
        s[e] = w[i * wrs + (e - i * p)] * f;
    }
}

// lr_cap_init writes the p×p identity into g, which the chunks' SYRKs then add SᵀS to (M = I + WᵀΨ⁻¹W).
// Launch: block (256, 1, 1), grid (min(ceil(p·p / 256), 2²⁰), 1, 1), no shared memory.
extern "C" __global__ void __launch_bounds__(LR_THREADS) lr_cap_init(double* g, long long p) {
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < p * p; e += step) {
        g[e] = e % (p + 1) == 0 ? 1.0 : 0.0;
    }
}

// lr_cap_out writes the row-major lower factor l (row stride lrs, upper triangle zeroed) from the column-major lower
// factor in g (ld p) unless *status (lr_em_check) is not zero, in which case l is left as it was.
// Launch: block (256, 1, 1), grid (min(ceil(p·p / 256), 2²⁰), 1, 1), no shared memory.
extern "C" __global__ void __launch_bounds__(LR_THREADS)
    lr_cap_out(double* l, long long lrs, const double* g, long long p, const int* status) {
    if (*status != 0) {
        return;
    }
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < p * p; e += step) {
        const long long i = e / p;
        const long long j = e - i * p;
        l[i * lrs + j] = j <= i ? g[i + j * p] : 0.0;
    }
}
