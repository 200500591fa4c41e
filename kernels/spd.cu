// Kernels of the SPD retraction R_Σ(ξ) = sym(Σ + ξ + ½ ξ Σ⁻¹ ξ) and transport E ξ Eᵀ, E = (S₂S₁⁻¹)^{1/2} (paper 000
// section 5.1), batched, one block per matrix with the factorisations in shared memory (backend/spd.go has the
// reference, which runs for the orders these kernels do not take; see backend/cuda/kernel_spd.go).
//
// spd_retract: block b takes matrices m = b, b + gridDim.x, …; it loads Σ_m into L and ξ_m into Y (row-major, leading
// dimension ld = n | 1, odd so that a column walk touches distinct banks), factors L = chol(Σ) in place by the
// right-looking algorithm (column k: pivot check, scaling, rank-1 update of the trailing triangle, a barrier between
// each), solves Y ← L⁻¹ξ one column per thread by forward substitution, and writes element (i, j) of the result as
// ½((q + Σ_ij) + ξ_ij + (q + Σ_ji) + ξ_ji) with q = ½ Σ_k Y_ki Y_kj — the reference's Syrk, two Axpby and
// Symmetrize, exactly symmetric because q(i, j) and q(j, i) are the same products summed in the same order. The
// result goes to the contiguous scratch out (batch × n × n), never to the destination: a pivot that is not a finite
// positive number marks the matrix as not SPD (atomicMax(flag, batch − m), so that flag names the first such
// matrix) and spd_commit then leaves the destination as it was. flag is two status words, zeroed before the launch.
//
// spd_transport (below) works the same way, with a Jacobi eigen-solver in the block; kron_solve, the damped K-FAC
// solve of backend/kron.go, shares the load, factorisation and triangular-solve helpers and the commit.
//
// Launch of spd_retract: block (T, 1, 1) with T ≤ SPD_THREADS a multiple of 32, grid (min(batch, 2²⁰), 1, 1),
// dynamic shared memory 2·n·ld doubles (above 48 KiB the Go side raises the function's limit). spd_commit: block
// (256, 1, 1), grid (min(ceil(batch·rows·cols / 256), 2²⁰), 1, 1), no shared memory.

#define SPD_THREADS 128

// Jacobi sweeps of spd_transport: at most SPD_SWEEPS, ending when the off-diagonal squares sum to at most
// SPD_JACOBI_TOL times the diagonal's.
#define SPD_SWEEPS 20
#define SPD_JACOBI_TOL 1e-30

// spd_load writes matrix m of src (rows × cols, batch stride bs, row stride rs) into D (row-major, leading
// dimension ld), with shift added to the diagonal.
__device__ __forceinline__ void spd_load(double* D, long long ld, const double* src, long long bs, long long rs,
                                         long long m, long long rows, long long cols, double shift, int tid,
                                         int nt) {
    const double* sm = src + m * bs;
    for (long long e = tid; e < rows * cols; e += nt) {
        const long long i = e / cols;
        const long long j = e - i * cols;
        D[i * ld + j] = i == j ? sm[i * rs + j] + shift : sm[i * rs + j];
    }
}

// spd_chol factors L in place (lower triangle, right-looking: column k's pivot check, its scaling, the rank-1
// update of the trailing triangle, a barrier between each). It returns false, uniformly over the block, when a pivot
// is not a finite positive number. It starts and, on success, ends with a barrier.
__device__ bool spd_chol(double* L, long long ld, long long n, int tid, int nt) {
    for (long long k = 0; k < n; k++) {
        __syncthreads(); // the previous column's update (or the load) is visible
        const double d = L[k * ld + k];
        if (!(d > 0) || isinf(d)) {
            return false; // every thread read the same pivot: the branch is uniform
        }
        const double s = sqrt(d);
        __syncthreads(); // every thread has read the pivot before it is overwritten
        for (long long i = k + tid; i < n; i += nt) {
            L[i * ld + k] = i == k ? s : L[i * ld + k] / s;
        }
        __syncthreads();
        const long long r = n - k - 1;
        for (long long e = tid; e < r * r; e += nt) {
            const long long i = k + 1 + e / r;
            const long long j = k + 1 + e % r;
            if (j <= i) {
                L[i * ld + j] -= L[i * ld + k] * L[j * ld + k];
            }
        }
    }
    __syncthreads();
    return true;
}

// spd_solve_cols overwrites the n × cols matrix X (leading dimension ldx) with L⁻¹X, or L⁻ᵀX when tr, for the n×n
// lower triangular L (leading dimension ldl): one thread per column, substitution down (up) the column.
__device__ __forceinline__ void spd_solve_cols(const double* L, long long ldl, double* X, long long ldx, long long n,
                                               long long cols, bool tr, int tid, int nt) {
    for (long long j = tid; j < cols; j += nt) {
        for (long long s = 0; s < n; s++) {
            const long long i = tr ? n - 1 - s : s;
            double y = X[i * ldx + j];
            if (tr) {
                for (long long k = i + 1; k < n; k++) {
                    y -= L[k * ldl + i] * X[k * ldx + j];
                }
            } else {
                for (long long k = 0; k < i; k++) {
                    y -= L[i * ldl + k] * X[k * ldx + j];
                }
            }
            X[i * ldx + j] = y / L[i * ldl + i];
        }
    }
}

// spd_solve_rows overwrites the rows × n matrix X with X L⁻ᵀ, or X L⁻¹ when tr: one thread per row, row x solving
// L z = x (zᵀL = xᵀ) by forward (backward) substitution.
__device__ __forceinline__ void spd_solve_rows(const double* L, long long ldl, double* X, long long ldx,
                                               long long rows, long long n, bool tr, int tid, int nt) {
    for (long long i = tid; i < rows; i += nt) {
        for (long long s = 0; s < n; s++) {
            const long long j = tr ? n - 1 - s : s;
            double z = X[i * ldx + j];
            if (tr) {
                for (long long k = j + 1; k < n; k++) {
                    z -= L[k * ldl + j] * X[i * ldx + k];
                }
            } else {
                for (long long k = 0; k < j; k++) {
                    z -= L[j * ldl + k] * X[i * ldx + k];
                }
            }
            X[i * ldx + j] = z / L[j * ldl + j];
        }
    }
}

extern "C" __global__ void __launch_bounds__(SPD_THREADS)
    spd_retract(double* out, const double* sigma, long long sbs, long long srs, const double* xi, long long xbs,
                long long xrs, int* flag, long long batch, long long n) {
    extern __shared__ double spd_smem[];
    const long long ld = n | 1;
    double* L = spd_smem;
    double* Y = spd_smem + n * ld;
    const int tid = threadIdx.x;
    const int nt = blockDim.x;
    for (long long m = blockIdx.x; m < batch; m += gridDim.x) {
        const double* sm = sigma + m * sbs;
        const double* xm = xi + m * xbs;
        spd_load(L, ld, sigma, sbs, srs, m, n, n, 0, tid, nt);
        spd_load(Y, ld, xi, xbs, xrs, m, n, n, 0, tid, nt);
        if (!spd_chol(L, ld, n, tid, nt)) {
            if (tid == 0) {
                atomicMax(flag, (int)(batch - m));
            }
            __syncthreads(); // L and Y are free for the next matrix
            continue;
        }
        spd_solve_cols(L, ld, Y, ld, n, n, false, tid, nt);
        __syncthreads();
        double* om = out + m * n * n;
        for (long long e = tid; e < n * n; e += nt) {
            const long long i = e / n;
            const long long j = e - i * n;
            double q = 0;
            for (long long k = 0; k < n; k++) {
                q += Y[k * ld + i] * Y[k * ld + j];
            }
            q *= 0.5;
            const double u = (q + sm[i * srs + j]) + xm[i * xrs + j];
            const double w = (q + sm[j * srs + i]) + xm[j * xrs + i];
            om[e] = 0.5 * (u + w);
        }
        __syncthreads(); // L and Y are free for the next matrix
    }
}

// spd_sum returns the sum of v over the block, the same in every thread: a butterfly within each warp, then the
// warp sums added in warp order. red holds SPD_THREADS / 32 doubles of shared memory.
__device__ __forceinline__ double spd_sum(double v, double* red, int tid, int nt) {
#pragma unroll
    for (int w = 16; w >= 1; w >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, w);
    }
    if ((tid & 31) == 0) {
        red[tid >> 5] = v;
    }
    __syncthreads();
    double s = 0;
    for (int w = 0; w < nt / 32; w++) {
        s += red[w];
    }
    __syncthreads();
    return s;
}

// spd_pair returns pair k of step s of the round-robin ordering of nn (even) indices: index 0 stays, the others
// turn, so that every pair meets once in nn − 1 steps and the pairs of one step are disjoint; p < q.
__device__ __forceinline__ void spd_pair(long long k, long long s, long long nn, long long* p, long long* q) {
    const long long a = k == 0 ? 0 : 1 + (k - 1 + s) % (nn - 1);
    const long long b = 1 + (nn - 2 - k + s) % (nn - 1);
    *p = a < b ? a : b;
    *q = a < b ? b : a;
}

// spd_jacobi diagonalises the symmetric A in place by parallel cyclic Jacobi (round-robin ordering, nn/2 disjoint
// rotations a step: their angles, then Jᵀ on the rows of A and J on the columns of V, then J on the columns of A,
// with a barrier between each and a_pq set to 0), accumulating V ← V J from V = I. rot holds nn doubles of shared
// memory. It sweeps until the off-diagonal squares sum to at most SPD_JACOBI_TOL times the diagonal's, at most
// SPD_SWEEPS times. It ends with a barrier.
__device__ void spd_jacobi(double* A, double* V, double* rot, double* red, long long ld, long long n, int tid,
                           int nt) {
    const long long nn = n + (n & 1);
    const long long np = nn / 2;
    for (int sweep = 0;; sweep++) {
        double off = 0, dg = 0;
        for (long long e = tid; e < n * n; e += nt) {
            const long long i = e / n;
            const double a = A[i * ld + (e - i * n)];
            if (e - i * n == i) {
                dg += a * a;
            } else {
                off += a * a;
            }
        }
        off = spd_sum(off, red, tid, nt);
        dg = spd_sum(dg, red, tid, nt);
        if (off <= SPD_JACOBI_TOL * dg || sweep == SPD_SWEEPS) {
            return;
        }
        for (long long st = 0; st < nn - 1; st++) {
            for (long long k = tid; k < np; k += nt) {
                long long p, q;
                spd_pair(k, st, nn, &p, &q);
                double c = 1, sn = 0;
                if (q < n && A[p * ld + q] != 0) {
                    const double apq = A[p * ld + q];
                    const double th = (A[q * ld + q] - A[p * ld + p]) / (2 * apq);
                    const double t = fabs(th) > 1e150 ? 0.5 / th
                                                       : (th >= 0 ? 1.0 : -1.0) / (fabs(th) + sqrt(th * th + 1));
                    c = 1 / sqrt(t * t + 1);
                    sn = t * c;
                }
                rot[2 * k] = c;
                rot[2 * k + 1] = sn;
            }
            __syncthreads();
            for (long long e = tid; e < np * n; e += nt) {
                const long long k = e / n;
                const long long j = e - k * n;
                long long p, q;
                spd_pair(k, st, nn, &p, &q);
                if (q >= n) {
                    continue;
                }
                const double c = rot[2 * k], sn = rot[2 * k + 1];
                const double ap = A[p * ld + j], aq = A[q * ld + j];
                A[p * ld + j] = c * ap - sn * aq;
                A[q * ld + j] = sn * ap + c * aq;
                const double vp = V[j * ld + p], vq = V[j * ld + q];
                V[j * ld + p] = c * vp - sn * vq;
                V[j * ld + q] = sn * vp + c * vq;
            }
            __syncthreads();
            for (long long e = tid; e < np * n; e += nt) {
                const long long k = e / n;
                const long long i = e - k * n;
                long long p, q;
                spd_pair(k, st, nn, &p, &q);
                if (q >= n) {
                    continue;
                }
                const double c = rot[2 * k], sn = rot[2 * k + 1];
                const double ap = A[i * ld + p], aq = A[i * ld + q];
                A[i * ld + p] = i == q ? 0.0 : c * ap - sn * aq;
                A[i * ld + q] = i == p ? 0.0 : sn * ap + c * aq;
            }
            __syncthreads();
        }
    }
}

// spd_mul writes C = A·op(B) for n×n matrices in shared memory (leading dimension ld): op(B) = Bᵀ when bt, and A
// lower triangular when lower (the sum stops at the diagonal). C must not be A or B.
__device__ __forceinline__ void spd_mul(double* C, const double* A, const double* B, bool bt, bool lower,
                                        long long ld, long long n, int tid, int nt) {
    for (long long e = tid; e < n * n; e += nt) {
        const long long i = e / n;
        const long long j = e - i * n;
        const long long kn = lower ? i + 1 : n;
        double s = 0;
        for (long long k = 0; k < kn; k++) {
            s += A[i * ld + k] * (bt ? B[j * ld + k] : B[k * ld + j]);
        }
        C[i * ld + j] = s;
    }
}

// spd_transport: the transport E ξ Eᵀ, E = (S₂S₁⁻¹)^{1/2}, as backend/spd.go evaluates it, one block per matrix:
// L₁ = chol(S₁) (kept in out while shared memory serves the rest), N = sym(L₁⁻¹S₂L₁⁻ᵀ) and P = L₁⁻¹ξL₁⁻ᵀ, N = VνVᵀ
// by Jacobi, U = V ν^{1/4}, M = UUᵀ = N^{1/2}, R = (M P) M, and element (i, j) of the result ½(x_ij + x_ji) with
// x = (L₁R)L₁ᵀ, exactly symmetric. An S₁ that is not SPD marks flag[0], a ν that is not a finite positive number
// (S₂ not SPD) flag[1], each by atomicMax(·, batch − m) so that it names the first such matrix. Three n×ld buffers
// (A, V, P) and nn = n + (n & 1) doubles of rotations are shared memory; V holds L₁ until N and P are formed.
// Launch as spd_retract, with dynamic shared memory 3·n·ld + nn doubles.
extern "C" __global__ void __launch_bounds__(SPD_THREADS)
    spd_transport(double* out, const double* s1, long long abs_, long long ars, const double* s2, long long bbs,
                  long long brs, const double* xi, long long xbs, long long xrs, int* flag, long long batch,
                  long long n) {
    extern __shared__ double spd_smem[];
    __shared__ double red[SPD_THREADS / 32];
    const long long ld = n | 1;
    double* A = spd_smem;
    double* V = A + n * ld;
    double* P = V + n * ld;
    double* rot = P + n * ld;
    const int tid = threadIdx.x;
    const int nt = blockDim.x;
    for (long long m = blockIdx.x; m < batch; m += gridDim.x) {
        double* om = out + m * n * n;
        spd_load(V, ld, s1, abs_, ars, m, n, n, 0, tid, nt);
        spd_load(A, ld, s2, bbs, brs, m, n, n, 0, tid, nt);
        spd_load(P, ld, xi, xbs, xrs, m, n, n, 0, tid, nt);
        if (!spd_chol(V, ld, n, tid, nt)) {
            if (tid == 0) {
                atomicMax(flag, (int)(batch - m));
            }
            __syncthreads();
            continue;
        }
        for (long long e = tid; e < n * n; e += nt) {
            const long long i = e / n;
            const long long j = e - i * n;
            om[e] = j <= i ? V[i * ld + j] : 0.0;
        }
        spd_solve_cols(V, ld, A, ld, n, n, false, tid, nt);
        spd_solve_cols(V, ld, P, ld, n, n, false, tid, nt);
        __syncthreads();
        spd_solve_rows(V, ld, A, ld, n, n, false, tid, nt);
        spd_solve_rows(V, ld, P, ld, n, n, false, tid, nt);
        __syncthreads();
        for (long long e = tid; e < n * n; e += nt) {
            const long long i = e / n;
            const long long j = e - i * n;
            if (i > j) {
                const double v = 0.5 * (A[i * ld + j] + A[j * ld + i]);
                A[i * ld + j] = v;
                A[j * ld + i] = v;
            }
            V[i * ld + j] = i == j ? 1.0 : 0.0;
        }
        __syncthreads();
        spd_jacobi(A, V, rot, red, ld, n, tid, nt);
        bool ok = true;
        for (long long j = 0; j < n; j++) {
            const double nu = A[j * ld + j];
            ok = ok && nu > 0 && !isinf(nu);
        }
        if (!ok) {
            if (tid == 0) {
                atomicMax(flag + 1, (int)(batch - m));
            }
            __syncthreads(); // every thread has read ν before the next matrix is loaded
            continue;
        }
        for (long long e = tid; e < n * n; e += nt) {
            const long long i = e / n;
            const long long j = e - i * n;
            V[i * ld + j] *= sqrt(sqrt(A[j * ld + j]));
        }
        __syncthreads();
        spd_mul(A, V, V, true, false, ld, n, tid, nt); // M = UUᵀ
        __syncthreads();
        spd_mul(V, A, P, false, false, ld, n, tid, nt); // T = M P
        __syncthreads();
        spd_mul(P, V, A, false, false, ld, n, tid, nt); // R = T M
        __syncthreads();
        spd_load(A, ld, om, 0, n, 0, n, n, 0, tid, nt); // L₁
        __syncthreads();
        spd_mul(V, A, P, false, true, ld, n, tid, nt); // W = L₁R
        __syncthreads();
        for (long long e = tid; e < n * n; e += nt) {
            const long long i = e / n;
            const long long j = e - i * n;
            double x = 0, y = 0;
            for (long long k = 0; k <= j; k++) {
                x += V[i * ld + k] * A[j * ld + k];
            }
            for (long long k = 0; k <= i; k++) {
                y += V[j * ld + k] * A[i * ld + k];
            }
            om[e] = 0.5 * (x + y);
        }
        __syncthreads(); // shared memory is free for the next matrix
    }
}

// spd_commit copies the contiguous batch × rows × cols matrices of src into dst (batch and row strides dbs, drs)
// unless one of the two status words flag[0], flag[1] is not zero, in which case dst is left untouched.
extern "C" __global__ void __launch_bounds__(256)
    spd_commit(double* dst, long long dbs, long long drs, const double* src, const int* flag, long long batch,
               long long rows, long long cols) {
    if (flag[0] != 0 || flag[1] != 0) {
        return;
    }
    const long long step = (long long)gridDim.x * blockDim.x;
    const long long rc = rows * cols;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < batch * rc; e += step) {
        const long long b = e / rc;
        const long long r = e - b * rc;
        const long long i = r / cols;
        dst[b * dbs + i * drs + (r - i * cols)] = src[e];
    }
}

// spd_retract_finish is the last step of the batched retraction for orders spd_retract does not take: q holds
// the contiguous column-major ½YᵀY of each item (GEMM, so not exactly symmetric), and out (contiguous,
// batch × n × n) gets ½((q_ij + Σ_ij) + ξ_ij + (q_ji + Σ_ji) + ξ_ji), as spd_retract writes it. Launch: block
// (256, 1, 1), grid (min(ceil(batch·n·n / 256), 2²⁰), 1, 1), no shared memory.
extern "C" __global__ void __launch_bounds__(256)
    spd_retract_finish(double* out, const double* q, const double* sigma, long long sbs, long long srs,
                       const double* xi, long long xbs, long long xrs, long long batch, long long n) {
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < batch * n * n; e += step) {
        const long long b = e / (n * n);
        const long long r = e - b * n * n;
        const long long i = r / n;
        const long long j = r - i * n;
        const double* qm = q + b * n * n;
        const double* sm = sigma + b * sbs;
        const double* xm = xi + b * xbs;
        const double u = (qm[i + j * n] + sm[i * srs + j]) + xm[i * xrs + j];
        const double w = (qm[j + i * n] + sm[j * srs + i]) + xm[j * xrs + i];
        out[e] = 0.5 * (u + w);
    }
}

// spd_info_flag turns the count status words info (cuSOLVER's and chol_check's, one per factor) into status word
// *flag for spd_commit: atomicMax(flag, batch − i) for each factor i that failed. Launch: block (256, 1, 1), grid
// (1, 1, 1), no shared memory.
extern "C" __global__ void __launch_bounds__(256)
    spd_info_flag(const int* info, long long count, int* flag, long long batch) {
    for (long long i = threadIdx.x; i < count; i += blockDim.x) {
        if (info[i] != 0) {
            atomicMax(flag, (int)(batch - i));
        }
    }
}

// kron_solve: the K-FAC solve (B + γI)⁻¹ G (A + γI)⁻¹ of backend/kron.go for G m×n, one block per batch item with
// A (n×n), B (m×m) and G in shared memory (leading dimensions n | 1, m | 1, n | 1): both damped factors by
// spd_chol (A's failure marks flag[0], B's flag[1], each by atomicMax(·, batch − m) so that it names the first such
// item; the reference factors every A before any B, so a failure of A is reported first), then
// G ← L_B⁻ᵀ L_B⁻¹ G (the reference's POTRS) and G ← G L_A⁻ᵀ L_A⁻¹ (its two right-side TRSMs), into the contiguous
// scratch out (batch × m × n) for spd_commit. Launch as spd_retract, with dynamic shared memory
// n·(n | 1) + m·(m | 1) + m·(n | 1) doubles.
extern "C" __global__ void __launch_bounds__(SPD_THREADS)
    kron_solve(double* out, const double* a, long long abs_, long long ars, const double* b, long long bbs,
               long long brs, const double* g, long long gbs, long long grs, double damping, int* flag,
               long long batch, long long m, long long n) {
    extern __shared__ double spd_smem[];
    const long long ldn = n | 1, ldm = m | 1;
    double* A = spd_smem;
    double* B = A + n * ldn;
    double* G = B + m * ldm;
    const int tid = threadIdx.x;
    const int nt = blockDim.x;
    for (long long it = blockIdx.x; it < batch; it += gridDim.x) {
        spd_load(A, ldn, a, abs_, ars, it, n, n, damping, tid, nt);
        spd_load(B, ldm, b, bbs, brs, it, m, m, damping, tid, nt);
        spd_load(G, ldn, g, gbs, grs, it, m, n, 0, tid, nt);
        if (!spd_chol(A, ldn, n, tid, nt)) {
            if (tid == 0) {
                atomicMax(flag, (int)(batch - it));
            }
            __syncthreads();
            continue;
        }
        if (!spd_chol(B, ldm, m, tid, nt)) {
            if (tid == 0) {
                atomicMax(flag + 1, (int)(batch - it));
            }
            __syncthreads();
            continue;
        }
        spd_solve_cols(B, ldm, G, ldn, m, n, false, tid, nt);
        spd_solve_cols(B, ldm, G, ldn, m, n, true, tid, nt);
        __syncthreads();
        spd_solve_rows(A, ldn, G, ldn, m, n, false, tid, nt);
        spd_solve_rows(A, ldn, G, ldn, m, n, true, tid, nt);
        __syncthreads();
        double* om = out + it * m * n;
        for (long long e = tid; e < m * n; e += nt) {
            const long long i = e / n;
            om[e] = G[i * ldn + (e - i * n)];
        }
        __syncthreads(); // shared memory is free for the next item
    }
}
