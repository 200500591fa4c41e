// Batched block kernels of the sparse Cholesky-factor families of paper 003 (backend/cholng_blocks.go, Algs 1c and
// 2c; notes §4.3, §6.1, Appendix D) and the small-block forms of the triangular kernels of backend/cholng.go. The
// blocks are tiny (r = 1 … 8 diagonal blocks, a few to some tens of coupling rows; up to CNG_QMAX) and there are up to 1e6 of them, so each
// operation is one launch with one thread per block (or per row of a block), reading its operands straight from the
// strided storage; the references chain several primitives with scratch tensors instead.
//
// Layout: operand X has element (i, a, k) at X + i·bs + a·rs + k; bs = 0 broadcasts one block over the batch. Column
// vectors (n × r × 1) use (i, a) at X + i·bs + a·rs.
//
// Sums over the batch (the coupling sum Σ_i M_i y_i of cholng_lower, the scalars of cholng_trinorm2 and
// cholng_logabsdiag) are deterministic: block b takes items b·256 + t, b·256 + t + G·256, … (G blocks, G a
// function of n only, chosen by the Go side); each thread's items are added in that order (cholng_lower instead
// reduces each grid-stride round across the block and adds the round totals in order), the 256 values of a
// block by warp butterflies (__shfl_xor_sync) and then the 8 warp sums in warp order; the block totals are written
// to part[b·q + a], and the last block to finish (a ticket from an atomic counter, zeroed by the Go side before the
// launch and reset by that block) adds them with the same reduction, thread t taking blocks t, t + 256, … in order.
// So the result depends on n only, not on scheduling, and the whole operation is one launch.
//
// Launch (all kernels): block (CNG_THREADS, 1, 1). Grid: min(ceil(work / 256), CNG_MAX_BLOCKS) for the summing
// kernels (the rest by grid-stride rounds), min(ceil(work / 256), 2²⁰) for the others. Dynamic shared memory:
// 8·(CNG_WARPS + 1)·q bytes for cholng_lower (q ≤ CNG_QMAX), 8·(CNG_WARPS + 1) for the scalar sums, none for the
// others.

#define CNG_THREADS 256
#define CNG_WARPS 8
#define CNG_RMAX 16
#define CNG_QMAX 512

// cng_warp_sum returns the sum of v over the warp, the bitwise same value in every lane (butterfly).
__device__ __forceinline__ double cng_warp_sum(double v) {
#pragma unroll
    for (int m = 16; m >= 1; m >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, m);
    }
    return v;
}

// cng_stage stores the warp sum of v as entry a of this warp's sums: red[a·CNG_WARPS + warp]. Every thread of the
// block calls it (with v = 0 where it has nothing).
__device__ __forceinline__ void cng_stage(double v, double* red, long long a) {
    v = cng_warp_sum(v);
    if ((threadIdx.x & 31) == 0) {
        red[a * CNG_WARPS + (threadIdx.x >> 5)] = v;
    }
}

// cng_warps returns the sum of the warp sums of entry a, in warp order, starting from 0 (after a __syncthreads).
__device__ __forceinline__ double cng_warps(const double* red, long long a) {
    double s = 0;
#pragma unroll
    for (int w = 0; w < CNG_WARPS; w++) {
        s += red[a * CNG_WARPS + w];
    }
    return s;
}

// cng_finish writes the block's totals tot[0..q) to part, and in the last block to finish adds the totals of all
// blocks, in block order per thread as the file comment says, into s: s[a·srs] = Σ (β = 0: s is not read) or
// Σ + β·s[a·srs]. Called by every thread of the block, after a __syncthreads that follows the last write of tot.
__device__ void cng_finish(const double* tot, double* part, unsigned* count, long long q, double* s, long long srs,
                           double beta, double* red) {
    __shared__ int last;
    for (long long t = threadIdx.x; t < q; t += CNG_THREADS) {
        part[(long long)blockIdx.x * q + t] = tot[t];
    }
    __threadfence(); // the totals are visible to every block before the ticket is taken
    __syncthreads();
    if (threadIdx.x == 0) {
        last = atomicAdd(count, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) {
        return;
    }
    __threadfence();
    const volatile double* vp = part;
    for (long long a = 0; a < q; a++) {
        double v = 0;
        for (long long b = threadIdx.x; b < gridDim.x; b += CNG_THREADS) {
            v += vp[b * q + a];
        }
        cng_stage(v, red, a);
    }
    __syncthreads();
    for (long long t = threadIdx.x; t < q; t += CNG_THREADS) {
        const double v = cng_warps(red, t);
        s[t * srs] = beta == 0 ? v : v + beta * s[t * srs];
    }
    if (threadIdx.x == 0) {
        *count = 0;
    }
}

// cng_scalar_finish adds every thread's acc over the block (butterflies, then the warp sums in warp order) and
// finishes the sum over the blocks into dst[0] (cng_finish with q = 1). Dynamic shared memory: CNG_WARPS + 1
// doubles.
__device__ void cng_scalar_finish(double acc, double* dst, double* part, unsigned* count) {
    extern __shared__ double cng_sh[];
    double* red = cng_sh;
    double* tot = cng_sh + CNG_WARPS;
    cng_stage(acc, red, 0);
    __syncthreads();
    if (threadIdx.x == 0) {
        tot[0] = cng_warps(red, 0);
    }
    __syncthreads();
    cng_finish(tot, part, count, 1, dst, 0, 0, red);
}

// cholng_lower: dst_i = Λ_i x_i (solve = 0) or Λ_i⁻¹ x_i (forward substitution), and with q > 0
// s ← β·s + Σ_i M_i u_i, u_i = x_i or dst_i (BlockLower; the T·x and T⁻¹·x local rows and the coupling sum of
// Alg 2c, notes §4.3). One thread per item, r ≤ CNG_RMAX (the block in registers, so dst may alias x). part holds
// G·q doubles; count is a zeroed unsigned. With q = 0, m, s, part and count are not read.
extern "C" __global__ void __launch_bounds__(CNG_THREADS)
    cholng_lower(double* dst, long long dbs, long long drs, const double* l, long long lbs, long long lrs,
                 const double* x, long long xbs, long long xrs, const double* m, long long mbs, long long mrs,
                 double* s, long long srs, double* part, unsigned* count, long long n, long long r, long long q,
                 int solve, double beta) {
    extern __shared__ double cng_sh[];
    double* red = cng_sh;
    double* tot = cng_sh + CNG_WARPS * q;
    for (long long t = threadIdx.x; t < q; t += CNG_THREADS) {
        tot[t] = 0;
    }
    const long long step = (long long)gridDim.x * CNG_THREADS;
    for (long long base = (long long)blockIdx.x * CNG_THREADS; base < n; base += step) {
        const long long i = base + threadIdx.x;
        const bool have = i < n;
        double u[CNG_RMAX], y[CNG_RMAX];
        if (have) {
            const double* xi = x + i * xbs;
            const double* li = l + i * lbs;
            double* di = dst + i * dbs;
            for (long long a = 0; a < r; a++) {
                u[a] = xi[a * xrs];
            }
            for (long long a = 0; a < r; a++) {
                const double* row = li + a * lrs;
                double v;
                if (solve) {
                    v = u[a];
                    for (long long k = 0; k < a; k++) {
                        v -= row[k] * y[k];
                    }
                    v = v / row[a];
                } else {
                    v = 0;
                    for (long long k = 0; k <= a; k++) {
                        v += row[k] * u[k];
                    }
                }
                y[a] = v;
            }
            for (long long a = 0; a < r; a++) {
                di[a * drs] = y[a];
            }
        }
        if (q > 0) { // uniform over the block
            for (long long a = 0; a < q; a++) {
                double v = 0;
                if (have) {
                    const double* row = m + i * mbs + a * mrs;
                    for (long long k = 0; k < r; k++) {
                        v += row[k] * (solve ? y[k] : u[k]);
                    }
                }
                cng_stage(v, red, a);
            }
            __syncthreads();
            for (long long t = threadIdx.x; t < q; t += CNG_THREADS) {
                tot[t] += cng_warps(red, t);
            }
            __syncthreads(); // red is free again
        }
    }
    if (q > 0) {
        cng_finish(tot, part, count, q, s, srs, beta, red);
    }
}

// cng_upper_solve overwrites u (r values) with Λ⁻ᵀ(u − Mᵀc) for one item: the coupling subtraction (skipped for
// q = 0), then back substitution in place (u[k > a] already holds the solution when row a is reached). Shared by
// cholng_upper, cholng_draw and cholng_natgrad, so the three give the same values.
__device__ __forceinline__ void cng_upper_solve(double* u, const double* li, long long lrs, const double* mi,
                                                long long mrs, const double* ci, long long crs, long long r,
                                                long long q) {
    for (long long k = 0; k < r && q > 0; k++) {
        double v = u[k];
        for (long long a = 0; a < q; a++) {
            v -= mi[a * mrs + k] * ci[a * crs];
        }
        u[k] = v;
    }
    for (long long a = r - 1; a >= 0; a--) {
        double v = u[a];
        for (long long k = a + 1; k < r; k++) {
            v -= li[k * lrs + a] * u[k];
        }
        u[a] = v / li[a * lrs + a];
    }
}

// cholng_upper: dst_i = Λ_iᵀ x_i + M_iᵀ c_i (solve = 0) or Λ_i⁻ᵀ(x_i − M_iᵀ c_i) (back substitution) (BlockUpper;
// sampling w_i and the μ step x_i of Alg 2c, notes §4.3). One thread per item, r ≤ CNG_RMAX (dst may alias x);
// with q = 0, m and c are not read.
extern "C" __global__ void __launch_bounds__(CNG_THREADS)
    cholng_upper(double* dst, long long dbs, long long drs, const double* l, long long lbs, long long lrs,
                 const double* x, long long xbs, long long xrs, const double* m, long long mbs, long long mrs,
                 const double* c, long long cbs, long long crs, long long n, long long r, long long q, int solve) {
    const long long step = (long long)gridDim.x * CNG_THREADS;
    for (long long i = (long long)blockIdx.x * CNG_THREADS + threadIdx.x; i < n; i += step) {
        const double* xi = x + i * xbs;
        const double* li = l + i * lbs;
        const double* mi = m + i * mbs;
        const double* ci = c + i * cbs;
        double* di = dst + i * dbs;
        double u[CNG_RMAX], y[CNG_RMAX];
        for (long long a = 0; a < r; a++) {
            u[a] = xi[a * xrs];
        }
        if (solve) {
            cng_upper_solve(u, li, lrs, mi, mrs, ci, crs, r, q);
            for (long long a = 0; a < r; a++) {
                y[a] = u[a];
            }
        } else {
            for (long long a = 0; a < r; a++) {
                double v = 0;
                for (long long k = a; k < r; k++) {
                    v += li[k * lrs + a] * u[k];
                }
                y[a] = v;
            }
            for (long long k = 0; k < r && q > 0; k++) {
                double v = 0;
                for (long long a = 0; a < q; a++) {
                    v += mi[a * mrs + k] * ci[a * crs];
                }
                y[k] += v;
            }
        }
        for (long long a = 0; a < r; a++) {
            di[a * drs] = y[a];
        }
    }
}

// cholng_rowscan: one thread per row a of each item i (n·p rows, any p and r), for the three row-wise products
// dst_i (p × r):
//   mode 0 (BlockCoupledTri, Appendix D eq. (12) fused, notes §4.3): entry (a, k) = α·y_k(Σ_{c≥k} M_ac x_c −
//     ½M_ak x_k + q_a) by a reverse scan along the row; with m null, α·q_a·y_k; with qv null, q_a = 0;
//   mode 1 (CholNGTri, p = r, notes §3.6): entry (a, k ≤ a) = α·y_k(Σ_{c=k}^{a} Λ_ac x_c − ½Λ_ak x_k), 0 above;
//   mode 2 (LowerOuter, p = r): entry (a, k ≤ a) = α·x_a·y_k, 0 above.
extern "C" __global__ void __launch_bounds__(CNG_THREADS)
    cholng_rowscan(double* dst, long long dbs, long long drs, const double* m, long long mbs, long long mrs,
                   const double* x, long long xbs, long long xrs, const double* y, long long ybs, long long yrs,
                   const double* qv, long long qbs, long long qrs, long long n, long long p, long long r, int mode,
                   double alpha) {
    const long long step = (long long)gridDim.x * CNG_THREADS;
    for (long long w = (long long)blockIdx.x * CNG_THREADS + threadIdx.x; w < n * p; w += step) {
        const long long i = w / p;
        const long long a = w - i * p;
        double* dr = dst + i * dbs + a * drs;
        const double* xi = x + i * xbs;
        const double* yi = y + i * ybs;
        long long top = r - 1; // last column written from the scan; zeros beyond it
        if (mode == 2) {
            top = a;
            const double ax = alpha * xi[a * xrs];
            for (long long k = 0; k <= a; k++) {
                dr[k] = ax * yi[k * yrs];
            }
        } else if (m == nullptr) {
            const double qa = alpha * qv[i * qbs + a * qrs];
            for (long long k = 0; k < r; k++) {
                dr[k] = qa * yi[k * yrs];
            }
        } else {
            if (mode == 1) {
                top = a;
            }
            const double* mr = m + i * mbs + a * mrs;
            double acc = qv == nullptr ? 0 : qv[i * qbs + a * qrs];
            for (long long k = top; k >= 0; k--) {
                const double t = mr[k] * xi[k * xrs];
                acc += t;
                dr[k] = alpha * yi[k * yrs] * (acc - 0.5 * t);
            }
        }
        for (long long k = top + 1; k < r; k++) {
            dr[k] = 0;
        }
    }
}

// cholng_trinorm2: dst = Σ_i Σ_k x_ik²(Σ_{l<k} y_il² + ½y_ik²) (BlockTriNorm2; the pattern part of the Riemannian
// norm of Alg 2c, notes §4.3), one thread per item (any r), summed as the file comment says. part holds G doubles.
extern "C" __global__ void __launch_bounds__(CNG_THREADS)
    cholng_trinorm2(double* dst, const double* x, long long xbs, long long xrs, const double* y, long long ybs,
                    long long yrs, double* part, unsigned* count, long long n, long long r) {
    double acc = 0;
    const long long step = (long long)gridDim.x * CNG_THREADS;
    for (long long i = (long long)blockIdx.x * CNG_THREADS + threadIdx.x; i < n; i += step) {
        const double* xi = x + i * xbs;
        const double* yi = y + i * ybs;
        double pre = 0, s = 0;
        for (long long k = 0; k < r; k++) {
            const double xk = xi[k * xrs], yk = yi[k * yrs];
            const double x2 = xk * xk, y2 = yk * yk;
            s += x2 * pre + 0.5 * x2 * y2;
            pre += y2;
        }
        acc += s;
    }
    cng_scalar_finish(acc, dst, part, count);
}

// cholng_logabsdiag: dst = Σ_i Σ_a log|(Λ_i)_aa| (BlockLogAbsDiag; log q of Algs 1c/2c, notes §5.5), one thread per
// item (any r), summed as the file comment says. part holds G doubles.
extern "C" __global__ void __launch_bounds__(CNG_THREADS)
    cholng_logabsdiag(double* dst, const double* l, long long lbs, long long lrs, double* part, unsigned* count,
                      long long n, long long r) {
    double acc = 0;
    const long long step = (long long)gridDim.x * CNG_THREADS;
    for (long long i = (long long)blockIdx.x * CNG_THREADS + threadIdx.x; i < n; i += step) {
        const double* li = l + i * lbs;
        for (long long a = 0; a < r; a++) {
            acc += log(fabs(li[a * (lrs + 1)]));
        }
    }
    cng_scalar_finish(acc, dst, part, count);
}

// cholng_draw: dst_i = Λ_i⁻ᵀ(x_i − M_iᵀ c_i) (back substitution, in the order of cholng_upper) and
// ld = Σ_i Σ_a log|(Λ_i)_aa| (in the order of cholng_logabsdiag) in one pass (BlockDraw; the draw of Alg 2c, notes
// §4.3). One thread per item, r ≤ CNG_RMAX (dst may alias x); with q = 0, m and c are not read. The sum as the file
// comment says; part holds G doubles.
extern "C" __global__ void __launch_bounds__(CNG_THREADS)
    cholng_draw(double* dst, long long dbs, long long drs, double* ld, const double* l, long long lbs, long long lrs,
                const double* x, long long xbs, long long xrs, const double* m, long long mbs, long long mrs,
                const double* c, long long cbs, long long crs, double* part, unsigned* count, long long n,
                long long r, long long q) {
    double acc = 0;
    const long long step = (long long)gridDim.x * CNG_THREADS;
    for (long long i = (long long)blockIdx.x * CNG_THREADS + threadIdx.x; i < n; i += step) {
        const double* xi = x + i * xbs;
        const double* li = l + i * lbs;
        const double* mi = m + i * mbs;
        const double* ci = c + i * cbs;
        double* di = dst + i * dbs;
        double u[CNG_RMAX];
        for (long long a = 0; a < r; a++) {
            u[a] = xi[a * xrs];
        }
        cng_upper_solve(u, li, lrs, mi, mrs, ci, crs, r, q);
        for (long long a = 0; a < r; a++) {
            di[a * drs] = u[a];
        }
        for (long long a = 0; a < r; a++) {
            acc += log(fabs(li[a * (lrs + 1)]));
        }
    }
    cng_scalar_finish(acc, ld, part, count);
}

// cholng_natgrad: the natural-gradient step of Alg 2c in one pass over the items (BlockNatGrad; Appendix D eq. (12),
// notes §4.3), each part in the order of operations of its own kernel:
//   dmu_i = Λ_i⁻ᵀ(v_i − M_iᵀ c_i)                                   (cholng_upper, solve)
//   dl_i (a, k ≤ a) = α·v_k(Σ_{c=k}^{a} Λ_ac z_c − ½Λ_ak z_k), 0 above (cholng_rowscan mode 1)
//   dm_i (a, k) = α·v_k(Σ_{c≥k} M_ac z_c − ½M_ak z_k + q_a)          (cholng_rowscan mode 0; q_a = 0 for qv null)
//   tn = Σ_i Σ_k z_ik²(Σ_{l<k} v_il² + ½v_ik²)                        (cholng_trinorm2)
// One thread per item, r ≤ CNG_RMAX, any p; the sum as the file comment says (part holds G doubles). The
// destinations do not overlap the operands. NVRTC may contract a·b + c here and in the separate kernels
// differently, so the two paths agree to rounding, not necessarily bit for bit.
extern "C" __global__ void __launch_bounds__(CNG_THREADS)
    cholng_natgrad(double* dmu, long long dubs, long long durs, double* dl, long long dlbs, long long dlrs,
                   double* dm, long long dmbs, long long dmrs, double* tn, const double* l, long long lbs,
                   long long lrs, const double* m, long long mbs, long long mrs, const double* c, long long cbs,
                   long long crs, const double* qv, long long qbs, long long qrs, const double* z, long long zbs,
                   long long zrs, const double* v, long long vbs, long long vrs, double* part, unsigned* count,
                   long long n, long long r, long long p, double alpha) {
    double acc = 0;
    const long long step = (long long)gridDim.x * CNG_THREADS;
    for (long long i = (long long)blockIdx.x * CNG_THREADS + threadIdx.x; i < n; i += step) {
        const double* li = l + i * lbs;
        const double* mi = m + i * mbs;
        const double* ci = c + i * cbs;
        const double* zi = z + i * zbs;
        const double* vi = v + i * vbs;
        double zr[CNG_RMAX], vr[CNG_RMAX], u[CNG_RMAX];
        for (long long k = 0; k < r; k++) {
            zr[k] = zi[k * zrs];
            vr[k] = vi[k * vrs];
        }
        // μ part.
        for (long long k = 0; k < r; k++) {
            u[k] = vr[k];
        }
        cng_upper_solve(u, li, lrs, mi, mrs, ci, crs, r, p);
        double* di = dmu + i * dubs;
        for (long long a = 0; a < r; a++) {
            di[a * durs] = u[a];
        }
        // Λ part.
        for (long long a = 0; a < r; a++) {
            const double* lr = li + a * lrs;
            double* dr = dl + i * dlbs + a * dlrs;
            double s = 0;
            for (long long k = a; k >= 0; k--) {
                const double t = lr[k] * zr[k];
                s += t;
                dr[k] = alpha * vr[k] * (s - 0.5 * t);
            }
            for (long long k = a + 1; k < r; k++) {
                dr[k] = 0;
            }
        }
        // Coupling part.
        for (long long a = 0; a < p; a++) {
            const double* mr = mi + a * mrs;
            double* dr = dm + i * dmbs + a * dmrs;
            double s = qv == nullptr ? 0 : qv[i * qbs + a * qrs];
            for (long long k = r - 1; k >= 0; k--) {
                const double t = mr[k] * zr[k];
                s += t;
                dr[k] = alpha * vr[k] * (s - 0.5 * t);
            }
        }
        // Pattern part of the Riemannian norm.
        double pre = 0, s = 0;
        for (long long k = 0; k < r; k++) {
            const double x2 = zr[k] * zr[k], y2 = vr[k] * vr[k];
            s += x2 * pre + 0.5 * x2 * y2;
            pre += y2;
        }
        acc += s;
    }
    cng_scalar_finish(acc, tn, part, count);
}
