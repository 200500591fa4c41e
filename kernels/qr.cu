// Kernels of the Stiefel QR retraction qf(X + tV) with diag(R) > 0 (paper 000 eq. (3.9); notes 5.1: without the sign
// fix qf(W) ≠ W and the retraction is discontinuous). The algorithms are those of backend/cpu/kernel_qr.go.
//
// qr_small_warp / qr_small_block: many small n×p matrices (n ≥ p) in one launch, one group of G threads per
// matrix (a warp, G = 32, or the whole block, G = 256). The group loads X + tV into shared memory, column-major with
// an odd leading dimension ld (n or n + 1, so that the transposing load is free of bank conflicts), and runs
// classical Gram–Schmidt with DGKS reorthogonalisation (CGS2) in place: lane l owns rows i ≡ l (mod G), so column
// operations touch only the lane's own rows and dot products are a partial sum per lane plus a group reduction.
// Its R has a positive diagonal by construction (no sign fix needed). When a column is too close to the span of the
// earlier ones (‖q_j‖² ≤ 1e-8·‖a_j‖², or the data are not finite) the group reloads X + tV and runs an unblocked
// Householder QR instead, forming Q in the destination (each lane its own rows) and applying the sign fix
// Q·diag(sign R_kk). dst may alias x or v: a matrix is read completely before any of its elements is written.
//
// Launch of qr_small_warp: block (32·W, 1, 1) with W matrices per block, grid (min(ceil(batch / W), 2²⁰), 1, 1),
// dynamic shared memory W·(ld·p + 3p) doubles. qr_small_block: block (256, 1, 1), grid (min(batch, 2²⁰), 1, 1),
// dynamic shared memory ld·p + 3p doubles (above 48 KiB the Go side raises the function's limit). A grid-stride loop
// over matrices covers batches larger than the grid.
//
// qr_axpy and qr_tall_check serve the tall-skinny path (CholeskyQR2 on cuBLAS and cuSOLVER, see kernel_qr.go).

#define QR_THREADS 256

// CGS acceptance and DGKS thresholds of backend/cpu/kernel_qr.go (cgsMinRatio, cgsReorth).
#define QR_CGS_MIN_RATIO 1e-8
#define QR_CGS_REORTH 0.5

// qr_sum returns the sum of v over the group, identical in every thread of the group (butterfly within a warp; for
// the block, the warp sums added in warp order). red holds QR_THREADS/32 doubles of shared memory (block only).
template <int G>
__device__ __forceinline__ double qr_sum(double v, double* red) {
#pragma unroll
    for (int m = 16; m >= 1; m >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, m);
    }
    if constexpr (G == 32) {
        return v;
    } else {
        if ((threadIdx.x & 31) == 0) {
            red[threadIdx.x >> 5] = v;
        }
        __syncthreads();
        double s = 0;
#pragma unroll
        for (int w = 0; w < G / 32; w++) {
            s += red[w];
        }
        __syncthreads();
        return s;
    }
}

// qr_sync orders the group's shared-memory accesses.
template <int G>
__device__ __forceinline__ void qr_sync() {
    if constexpr (G == 32) {
        __syncwarp();
    } else {
        __syncthreads();
    }
}

// qr_load writes matrix m of x + t·v (v null: x) column-major into A (leading dimension ld). Consecutive lanes
// take consecutive elements of the row-major source (coalesced reads).
template <int G>
__device__ __forceinline__ void qr_load(double* A, long long ld, const double* x, long long xbs, long long xrs,
                                        const double* v, long long vbs, long long vrs, double t, long long m,
                                        long long n, long long p, int lane) {
    const double* xm = x + m * xbs;
    const double* vm = v == 0 ? v : v + m * vbs;
    for (long long e = lane; e < n * p; e += G) {
        const long long i = e / p;
        const long long j = e - i * p;
        double a = xm[i * xrs + j];
        if (v != 0) {
            a += t * vm[i * vrs + j];
        }
        A[j * ld + i] = a;
    }
}

// qr_cgs2 overwrites the columns of A with Q by classical Gram–Schmidt with reorthogonalisation where the DGKS test
// asks for it (backend/cpu cgs2ColMajor). rb holds p doubles of shared memory for the coefficients r_k. It returns
// false (uniformly over the group) when a column is too close to the span of the earlier ones or not finite; A is
// then partly overwritten.
template <int G>
__device__ bool qr_cgs2(double* A, long long ld, double* rb, long long n, long long p, int lane, double* red) {
    for (long long j = 0; j < p; j++) {
        double* aj = A + j * ld;
        double part = 0;
        for (long long i = lane; i < n; i += G) {
            part += aj[i] * aj[i];
        }
        const double n0 = qr_sum<G>(part, red);
        double nj = n0;
        for (int pass = 0; pass < 2 && j > 0; pass++) {
            for (long long k = 0; k < j; k++) {
                const double* ak = A + k * ld;
                part = 0;
                for (long long i = lane; i < n; i += G) {
                    part += ak[i] * aj[i];
                }
                const double r = qr_sum<G>(part, red);
                if (lane == 0) {
                    rb[k] = r;
                }
            }
            qr_sync<G>(); // rb written
            for (long long i = lane; i < n; i += G) {
                double a = aj[i];
                for (long long k = 0; k < j; k++) {
                    a -= rb[k] * A[k * ld + i];
                }
                aj[i] = a;
            }
            qr_sync<G>(); // rb read by every lane before it is written again
            part = 0;
            for (long long i = lane; i < n; i += G) {
                part += aj[i] * aj[i];
            }
            const double prev = nj;
            nj = qr_sum<G>(part, red);
            if (nj >= QR_CGS_REORTH * prev) {
                break;
            }
        }
        if (!(nj > QR_CGS_MIN_RATIO * n0) || isinf(nj)) {
            return false;
        }
        const double s = 1 / sqrt(nj);
        for (long long i = lane; i < n; i += G) {
            aj[i] *= s;
        }
    }
    return true;
}

// qr_householder is the fallback: an unblocked Householder QR of A (LAPACK dlarfg convention, as backend/cpu
// qrHouse: u = [1; tail], R_kk = β in place), then Q = H_0 ⋯ H_{p−1} [I; 0] formed backwards directly in matrix m of
// dst and multiplied by diag(sign R_kk) so that diag(R) > 0. tau and sg hold p doubles of shared memory each. Every
// access to dst is to a row the lane owns, so dst needs no synchronisation.
template <int G>
__device__ void qr_householder(double* A, long long ld, double* tau, double* sg, double* dm, long long drs,
                               long long n, long long p, int lane, double* red) {
    for (long long k = 0; k < p; k++) {
        double* ak = A + k * ld;
        qr_sync<G>(); // the previous step's writes to A are visible
        const double alpha = ak[k];
        double part = 0;
        for (long long i = lane; i < n; i += G) {
            if (i > k) {
                part += ak[i] * ak[i];
            }
        }
        const double xx = qr_sum<G>(part, red);
        qr_sync<G>(); // every lane has read alpha before the owner of row k overwrites it
        double tk, sk;
        if (xx == 0) {
            tk = 0; // nothing below the diagonal: H = I, R_kk = alpha
            sk = alpha < 0 ? -1.0 : 1.0;
        } else {
            const double beta = -copysign(hypot(alpha, sqrt(xx)), alpha);
            tk = (beta - alpha) / beta;
            const double sc = 1 / (alpha - beta);
            for (long long i = lane; i < n; i += G) {
                if (i > k) {
                    ak[i] *= sc;
                } else if (i == k) {
                    ak[i] = beta;
                }
            }
            sk = beta < 0 ? -1.0 : 1.0;
        }
        if (lane == 0) {
            tau[k] = tk;
            sg[k] = sk;
        }
        if (tk == 0) {
            continue;
        }
        // Columns j > k: c ← c − τ (c_k + tailᵀ c_tail) [1; tail] (backend/cpu qrReflect).
        for (long long j = k + 1; j < p; j++) {
            double* aj = A + j * ld;
            part = 0;
            for (long long i = lane; i < n; i += G) {
                if (i > k) {
                    part += ak[i] * aj[i];
                } else if (i == k) {
                    part += aj[i];
                }
            }
            const double w = tk * qr_sum<G>(part, red);
            for (long long i = lane; i < n; i += G) {
                if (i > k) {
                    aj[i] -= w * ak[i];
                } else if (i == k) {
                    aj[i] -= w;
                }
            }
        }
    }
    qr_sync<G>(); // tau, sg and the reflectors are visible to every lane
    for (long long i = lane; i < n; i += G) {
        for (long long j = 0; j < p; j++) {
            dm[i * drs + j] = i == j ? 1.0 : 0.0;
        }
    }
    for (long long k = p - 1; k >= 0; k--) {
        const double tk = tau[k];
        if (tk == 0) {
            continue;
        }
        const double* ak = A + k * ld;
        for (long long j = k; j < p; j++) {
            double part = 0;
            for (long long i = lane; i < n; i += G) {
                if (i > k) {
                    part += ak[i] * dm[i * drs + j];
                } else if (i == k) {
                    part += dm[i * drs + j];
                }
            }
            const double w = tk * qr_sum<G>(part, red);
            for (long long i = lane; i < n; i += G) {
                if (i > k) {
                    dm[i * drs + j] -= w * ak[i];
                } else if (i == k) {
                    dm[i * drs + j] -= w;
                }
            }
        }
    }
    for (long long i = lane; i < n; i += G) {
        for (long long j = 0; j < p; j++) {
            dm[i * drs + j] *= sg[j];
        }
    }
}

template <int G>
__device__ void qr_small(double* dst, long long dbs, long long drs, const double* x, long long xbs, long long xrs,
                         const double* v, long long vbs, long long vrs, double t, long long batch, long long n,
                         long long p, double* red) {
    extern __shared__ double qr_smem[];
    const long long ld = n | 1;
    const int groups = blockDim.x / G;
    const int gl = threadIdx.x / G;
    const int lane = threadIdx.x % G;
    double* A = qr_smem + (long long)gl * (ld * p + 3 * p);
    double* rb = A + ld * p;
    double* tau = rb + p;
    double* sg = tau + p;
    for (long long m = (long long)blockIdx.x * groups + gl; m < batch; m += (long long)gridDim.x * groups) {
        qr_load<G>(A, ld, x, xbs, xrs, v, vbs, vrs, t, m, n, p, lane);
        qr_sync<G>();
        double* dm = dst + m * dbs;
        if (qr_cgs2<G>(A, ld, rb, n, p, lane, red)) {
            qr_sync<G>();
            for (long long e = lane; e < n * p; e += G) {
                const long long i = e / p;
                const long long j = e - i * p;
                dm[i * drs + j] = A[j * ld + i];
            }
        } else {
            qr_sync<G>();
            qr_load<G>(A, ld, x, xbs, xrs, v, vbs, vrs, t, m, n, p, lane);
            qr_householder<G>(A, ld, tau, sg, dm, drs, n, p, lane, red);
        }
        qr_sync<G>(); // A is free for the next matrix
    }
}

extern "C" __global__ void __launch_bounds__(QR_THREADS)
    qr_small_warp(double* dst, long long dbs, long long drs, const double* x, long long xbs, long long xrs,
                  const double* v, long long vbs, long long vrs, double t, long long batch, long long n, long long p) {
    qr_small<32>(dst, dbs, drs, x, xbs, xrs, v, vbs, vrs, t, batch, n, p, 0);
}

extern "C" __global__ void __launch_bounds__(QR_THREADS)
    qr_small_block(double* dst, long long dbs, long long drs, const double* x, long long xbs, long long xrs,
                   const double* v, long long vbs, long long vrs, double t, long long batch, long long n, long long p) {
    __shared__ double red[QR_THREADS / 32];
    qr_small<QR_THREADS>(dst, dbs, drs, x, xbs, xrs, v, vbs, vrs, t, batch, n, p, red);
}

// qr_axpy writes dst = x + t·v (v null: dst = x) for one n×p matrix with row strides drs, xrs, vrs; dst may alias x
// or v (each element is read and written by one thread). Launch: block (256, 1, 1), grid
// (min(ceil(n·p / 256), 2²⁰), 1, 1), no shared memory.
extern "C" __global__ void __launch_bounds__(256)
    qr_axpy(double* dst, long long drs, const double* x, long long xrs, const double* v, long long vrs, double t,
            long long n, long long p) {
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n * p; e += step) {
        const long long i = e / p;
        const long long j = e - i * p;
        double a = x[i * xrs + j];
        if (v != 0) {
            a += t * v[i * vrs + j];
        }
        dst[i * drs + j] = a;
    }
}

// qr_tall_check guards the tall-skinny CholeskyQR2 (backend/cpu qrRetractTall) without a round trip to the host.
// r is a p×p column-major matrix (leading dimension p) whose upper triangle is read, info the status cuSOLVER's
// potrf wrote (stages 1 and 3), flag an int that becomes 1 when the path has failed. Stage 1 (after the first
// Cholesky): fail when info ≠ 0 or max/min diag(R₁) is not below 1e7 (κ(A) too large for the Gram matrix). Stage 2
// (before the second Cholesky, r = Q₁ᵀQ₁): fail when an element of the upper triangle is more than 0.5 away from the
// identity's. Stage 3 (after the second Cholesky): fail when info ≠ 0 or diag(R₂) is not finite and positive. On
// failure, or when flag was already set, r is overwritten with the identity, which makes the following Cholesky and
// triangular solve no-ops: dst keeps the last good iterate (A or Q₁, whose qf is qf(A)) for the host's fallback.
// Launch: block (256, 1, 1), grid (1, 1, 1), no dynamic shared memory.
extern "C" __global__ void __launch_bounds__(256)
    qr_tall_check(double* r, const int* info, int* flag, long long p, int stage) {
    int bad = 0;
    if (threadIdx.x == 0) {
        bad = *flag != 0;
        if (stage == 1 || stage == 3) {
            bad = bad || *info != 0;
            double lo = r[0], hi = r[0];
            for (long long i = 0; i < p; i++) {
                const double d = r[i * p + i];
                if (!(d > 0) || isinf(d)) {
                    bad = 1;
                }
                lo = fmin(lo, d);
                hi = fmax(hi, d);
            }
            if (stage == 1 && !(lo > 0 && hi / lo < 1e7)) {
                bad = 1;
            }
        }
    }
    if (stage == 2) {
        for (long long e = threadIdx.x; e < p * p; e += blockDim.x) {
            const long long j = e / p;
            const long long i = e - j * p;
            if (i <= j && fabs(r[e] - (i == j ? 1.0 : 0.0)) > 0.5) {
                bad = 1;
            }
        }
    }
    bad = __syncthreads_or(bad);
    if (!bad) {
        return;
    }
    for (long long e = threadIdx.x; e < p * p; e += blockDim.x) {
        const long long j = e / p;
        r[e] = (e - j * p) == j ? 1.0 : 0.0;
    }
    if (threadIdx.x == 0) {
        *flag = 1;
    }
}
