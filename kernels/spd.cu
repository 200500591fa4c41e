// Kernels of the SPD retraction R_Σ(ξ) = sym(Σ + ξ + ½ ξ Σ⁻¹ ξ) (paper 000 section 5.1), batched, one block per
// matrix with the factorisation in shared memory (backend/spd.go has the reference, which runs for the orders these
// kernels do not take; see backend/cuda/kernel_spd.go).
//
// spd_retract: block b takes matrices m = b, b + gridDim.x, …; it loads Σ_m into L and ξ_m into Y (row-major, leading
// dimension ld = n | 1, odd so that a column walk touches distinct banks), factors L = chol(Σ) in place by the
// right-looking algorithm (column k: pivot check, scaling, rank-1 update of the trailing triangle, a barrier between
// each), solves Y ← L⁻¹ξ one column per thread by forward substitution, and writes element (i, j) of the result as
// ½((q + Σ_ij) + ξ_ij + (q + Σ_ji) + ξ_ji) with q = ½ Σ_k Y_ki Y_kj — the reference's Syrk, two Axpby and
// Symmetrize, exactly symmetric because q(i, j) and q(j, i) are the same products summed in the same order. The
// result goes to the contiguous scratch out (batch × n × n), never to the destination: a pivot that is not a finite
// positive number marks the matrix as not SPD (atomicMax(flag, batch − m), so that flag names the first such
// matrix) and spd_commit then leaves the destination as it was.
//
// Launch of spd_retract: block (T, 1, 1) with T ≤ SPD_THREADS a multiple of 32, grid (min(batch, 2²⁰), 1, 1),
// dynamic shared memory 2·n·ld doubles (above 48 KiB the Go side raises the function's limit). spd_commit: block
// (256, 1, 1), grid (min(ceil(batch·n·n / 256), 2²⁰), 1, 1), no shared memory.

#define SPD_THREADS 128

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
        for (long long e = tid; e < n * n; e += nt) {
            const long long i = e / n;
            const long long j = e - i * n;
            L[i * ld + j] = sm[i * srs + j];
            Y[i * ld + j] = xm[i * xrs + j];
        }
        bool ok = true;
        for (long long k = 0; k < n; k++) {
            __syncthreads(); // the previous column's update (or the load) is visible
            const double d = L[k * ld + k];
            if (!(d > 0) || isinf(d)) {
                ok = false; // every thread read the same pivot: the branch is uniform
                break;
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
        if (!ok) {
            if (tid == 0) {
                atomicMax(flag, (int)(batch - m));
            }
            __syncthreads(); // L and Y are free for the next matrix
            continue;
        }
        __syncthreads();
        for (long long j = tid; j < n; j += nt) {
            for (long long i = 0; i < n; i++) {
                double y = Y[i * ld + j];
                for (long long k = 0; k < i; k++) {
                    y -= L[i * ld + k] * Y[k * ld + j];
                }
                Y[i * ld + j] = y / L[i * ld + i];
            }
        }
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

// spd_commit copies the contiguous batch × n × n matrices of src into dst (batch and row strides dbs, drs) unless
// *flag is not zero, in which case dst is left untouched.
extern "C" __global__ void __launch_bounds__(256)
    spd_commit(double* dst, long long dbs, long long drs, const double* src, const int* flag, long long batch,
               long long n) {
    if (*flag != 0) {
        return;
    }
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < batch * n * n; e += step) {
        const long long b = e / (n * n);
        const long long r = e - b * n * n;
        const long long i = r / n;
        dst[b * dbs + i * drs + (r - i * n)] = src[e];
    }
}
