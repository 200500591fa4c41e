// Fused kernels for the sphere hot operations (backend/sphere.go; paper 001, Section 3.1–3.2, eq. (7)).
//
// The operands are batch×K×n tensors; a row (b, i) of n elements sits at ptr + b·bs + i·rs and is processed with
// its own norms. Rows are numbered r = b·K + i, r < nrows = batch·K. A row is handled by a group of G threads:
//   - G = 1 (the *_thread kernels, n ≤ 8): one thread per row, the row in registers;
//   - G = 32 (the *_warp kernels, n ≤ 512 in practice): one warp per row, eight rows per block;
//   - G = 256 (the *_block kernels, longer rows): one block per row.
// Lane l of a group owns elements j = l + k·G. The first R of them (k < R) are kept in registers between the
// reduction and the update, so a row is read from memory once and written once; elements beyond R·G (rows longer
// than 8, 512 and 5120 elements in the three variants) are read again in the update (from cache). Every kernel is
// correct for any n; the Go side picks the variant by n only for speed.
//
// Launch (all variants): block (256, 1, 1), no dynamic shared memory (the block variant uses a static 8-double
// array for its reduction). Grid (x only, a grid-stride loop covers the rest): thread variant
// min(ceil(nrows / 256), 2²⁰), warp variant min(ceil(nrows / 8), 2²⁰), block variant min(nrows, 2²⁰).
//
// Reductions are butterflies (__shfl_xor_sync), so every lane of a warp ends with the bitwise same sum, and the
// block variant adds the eight warp sums in the same order in every thread: branches on a reduced value (a row at
// rest) are uniform over the group.

#define SPH_THREADS 256
#define SPH_R_THREAD 8
#define SPH_R_WARP 16
#define SPH_R_BLOCK 20

// sph_sum returns the sum of v over the group of G threads, in every thread of the group. red is an array of
// SPH_THREADS/32 doubles of shared memory, used (and synchronised) only when G is the whole block.
template <int G>
__device__ __forceinline__ double sph_sum(double v, double* red) {
    if constexpr (G == 1) {
        return v;
    } else {
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
            __syncthreads(); // red is free again
            return s;
        }
    }
}

// sph_group returns the first row of this thread's group, the row step of the grid-stride loop and the lane.
template <int G>
__device__ __forceinline__ void sph_group(long long& first, long long& step, int& lane) {
    if constexpr (G == 1) {
        first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
        step = (long long)gridDim.x * blockDim.x;
        lane = 0;
    } else if constexpr (G == 32) {
        first = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
        step = (long long)gridDim.x * (blockDim.x / 32);
        lane = threadIdx.x & 31;
    } else {
        first = blockIdx.x;
        step = gridDim.x;
        lane = threadIdx.x;
    }
}

// sph_row returns the offset of row r = b·K + i of a tensor with batch stride bs and row stride rs.
__device__ __forceinline__ long long sph_row(long long r, long long K, long long bs, long long rs) {
    const long long b = r / K;
    return b * bs + (r - b * K) * rs;
}

// Geodesic flow, in place: x ← x cos(αh) + v sin(αh)/α, v ← v cos(αh) − α sin(αh) x with α = ‖v_row‖. A row with
// ‖v‖² = 0 is not written (bit-identical no-op). Same arithmetic as backend/cpu sphereFlowFused.
template <int G, int R>
__device__ __forceinline__ void sph_flow(double* x, long long xbs, long long xrs, double* v, long long vbs,
                                         long long vrs, long long nrows, long long K, long long n, double h,
                                         double* red) {
    long long first, step;
    int lane;
    sph_group<G>(first, step, lane);
    for (long long r = first; r < nrows; r += step) {
        double* xr = x + sph_row(r, K, xbs, xrs);
        double* vr = v + sph_row(r, K, vbs, vrs);
        double xc[R], vc[R];
        double ss = 0;
#pragma unroll
        for (int k = 0; k < R; k++) {
            const long long j = lane + (long long)k * G;
            xc[k] = 0;
            vc[k] = 0;
            if (j < n) {
                xc[k] = xr[j];
                vc[k] = vr[j];
                ss += vc[k] * vc[k];
            }
        }
        for (long long j = lane + (long long)R * G; j < n; j += G) {
            const double vj = vr[j];
            ss += vj * vj;
        }
        ss = sph_sum<G>(ss, red);
        if (ss == 0) {
            continue; // at rest: x and v keep every bit (uniform over the group)
        }
        const double alpha = sqrt(ss);
        double s, c;
        sincos(alpha * h, &s, &c);
        const double hs = s / alpha; // h·sinc(αh) without cancellation for small α
        const double as = alpha * s;
#pragma unroll
        for (int k = 0; k < R; k++) {
            const long long j = lane + (long long)k * G;
            if (j < n) {
                xr[j] = xc[k] * c + vc[k] * hs;
                vr[j] = vc[k] * c - xc[k] * as;
            }
        }
        for (long long j = lane + (long long)R * G; j < n; j += G) {
            const double xj = xr[j], vj = vr[j];
            xr[j] = xj * c + vj * hs;
            vr[j] = vj * c - xj * as;
        }
    }
}

// Tangent projection dst = w − (x·w) x row by row. dst may alias x or w: every element of a row is read before the
// reduction and written after it, by the thread that read it.
template <int G, int R>
__device__ __forceinline__ void sph_project(double* dst, long long dbs, long long drs, const double* x, long long xbs,
                                            long long xrs, const double* w, long long wbs, long long wrs,
                                            long long nrows, long long K, long long n, double* red) {
    long long first, step;
    int lane;
    sph_group<G>(first, step, lane);
    for (long long r = first; r < nrows; r += step) {
        double* dr = dst + sph_row(r, K, dbs, drs);
        const double* xr = x + sph_row(r, K, xbs, xrs);
        const double* wr = w + sph_row(r, K, wbs, wrs);
        double xc[R], wc[R];
        double d = 0;
#pragma unroll
        for (int k = 0; k < R; k++) {
            const long long j = lane + (long long)k * G;
            xc[k] = 0;
            wc[k] = 0;
            if (j < n) {
                xc[k] = xr[j];
                wc[k] = wr[j];
                d += xc[k] * wc[k];
            }
        }
        for (long long j = lane + (long long)R * G; j < n; j += G) {
            d += xr[j] * wr[j];
        }
        d = sph_sum<G>(d, red);
#pragma unroll
        for (int k = 0; k < R; k++) {
            const long long j = lane + (long long)k * G;
            if (j < n) {
                dr[j] = wc[k] - d * xc[k];
            }
        }
        for (long long j = lane + (long long)R * G; j < n; j += G) {
            const double xj = xr[j], wj = wr[j];
            dr[j] = wj - d * xj;
        }
    }
}

// Renormalisation x ← x/‖x‖ and, when v is not null, v ← v − (x·v) x with the new x (notes P3), as backend/cpu
// sphereNormalizeFused: two reductions, the second over the normalised row.
template <int G, int R>
__device__ __forceinline__ void sph_normalize(double* x, long long xbs, long long xrs, double* v, long long vbs,
                                              long long vrs, long long nrows, long long K, long long n, double* red) {
    long long first, step;
    int lane;
    sph_group<G>(first, step, lane);
    for (long long r = first; r < nrows; r += step) {
        double* xr = x + sph_row(r, K, xbs, xrs);
        double xc[R], vc[R];
        double nx = 0;
#pragma unroll
        for (int k = 0; k < R; k++) {
            const long long j = lane + (long long)k * G;
            xc[k] = 0;
            vc[k] = 0;
            if (j < n) {
                xc[k] = xr[j];
                nx += xc[k] * xc[k];
            }
        }
        for (long long j = lane + (long long)R * G; j < n; j += G) {
            const double xj = xr[j];
            nx += xj * xj;
        }
        nx = sph_sum<G>(nx, red);
        const double inv = 1 / sqrt(nx);
#pragma unroll
        for (int k = 0; k < R; k++) {
            const long long j = lane + (long long)k * G;
            if (j < n) {
                xc[k] *= inv;
                xr[j] = xc[k];
            }
        }
        for (long long j = lane + (long long)R * G; j < n; j += G) {
            xr[j] *= inv;
        }
        if (v == 0) {
            continue;
        }
        double* vr = v + sph_row(r, K, vbs, vrs);
        double d = 0;
#pragma unroll
        for (int k = 0; k < R; k++) {
            const long long j = lane + (long long)k * G;
            if (j < n) {
                vc[k] = vr[j];
                d += xc[k] * vc[k];
            }
        }
        for (long long j = lane + (long long)R * G; j < n; j += G) {
            d += xr[j] * vr[j];
        }
        d = sph_sum<G>(d, red);
#pragma unroll
        for (int k = 0; k < R; k++) {
            const long long j = lane + (long long)k * G;
            if (j < n) {
                vr[j] = vc[k] - d * xc[k];
            }
        }
        for (long long j = lane + (long long)R * G; j < n; j += G) {
            vr[j] -= d * xr[j];
        }
    }
}

extern "C" __global__ void __launch_bounds__(SPH_THREADS)
    sphere_flow_thread(double* x, long long xbs, long long xrs, double* v, long long vbs, long long vrs, long long nrows,
        long long K, long long n, double h) {
    sph_flow<1, SPH_R_THREAD>(x, xbs, xrs, v, vbs, vrs, nrows, K, n, h, 0);
}

extern "C" __global__ void __launch_bounds__(SPH_THREADS)
    sphere_flow_warp(double* x, long long xbs, long long xrs, double* v, long long vbs, long long vrs, long long nrows,
        long long K, long long n, double h) {
    sph_flow<32, SPH_R_WARP>(x, xbs, xrs, v, vbs, vrs, nrows, K, n, h, 0);
}

extern "C" __global__ void __launch_bounds__(SPH_THREADS, 2)
    sphere_flow_block(double* x, long long xbs, long long xrs, double* v, long long vbs, long long vrs, long long nrows,
        long long K, long long n, double h) {
    __shared__ double red[SPH_THREADS / 32];
    sph_flow<SPH_THREADS, SPH_R_BLOCK>(x, xbs, xrs, v, vbs, vrs, nrows, K, n, h, red);
}

extern "C" __global__ void __launch_bounds__(SPH_THREADS)
    sphere_project_thread(double* dst, long long dbs, long long drs, const double* x, long long xbs, long long xrs,
        const double* w, long long wbs, long long wrs, long long nrows, long long K, long long n) {
    sph_project<1, SPH_R_THREAD>(dst, dbs, drs, x, xbs, xrs, w, wbs, wrs, nrows, K, n, 0);
}

extern "C" __global__ void __launch_bounds__(SPH_THREADS)
    sphere_project_warp(double* dst, long long dbs, long long drs, const double* x, long long xbs, long long xrs,
        const double* w, long long wbs, long long wrs, long long nrows, long long K, long long n) {
    sph_project<32, SPH_R_WARP>(dst, dbs, drs, x, xbs, xrs, w, wbs, wrs, nrows, K, n, 0);
}

extern "C" __global__ void __launch_bounds__(SPH_THREADS, 2)
    sphere_project_block(double* dst, long long dbs, long long drs, const double* x, long long xbs, long long xrs,
        const double* w, long long wbs, long long wrs, long long nrows, long long K, long long n) {
    __shared__ double red[SPH_THREADS / 32];
    sph_project<SPH_THREADS, SPH_R_BLOCK>(dst, dbs, drs, x, xbs, xrs, w, wbs, wrs, nrows, K, n, red);
}

extern "C" __global__ void __launch_bounds__(SPH_THREADS)
    sphere_normalize_thread(double* x, long long xbs, long long xrs, double* v, long long vbs, long long vrs, long long nrows,
        long long K, long long n) {
    sph_normalize<1, SPH_R_THREAD>(x, xbs, xrs, v, vbs, vrs, nrows, K, n, 0);
}

extern "C" __global__ void __launch_bounds__(SPH_THREADS)
    sphere_normalize_warp(double* x, long long xbs, long long xrs, double* v, long long vbs, long long vrs, long long nrows,
        long long K, long long n) {
    sph_normalize<32, SPH_R_WARP>(x, xbs, xrs, v, vbs, vrs, nrows, K, n, 0);
}

extern "C" __global__ void __launch_bounds__(SPH_THREADS, 2)
    sphere_normalize_block(double* x, long long xbs, long long xrs, double* v, long long vbs, long long vrs, long long nrows,
        long long K, long long n) {
    __shared__ double red[SPH_THREADS / 32];
    sph_normalize<SPH_THREADS, SPH_R_BLOCK>(x, xbs, xrs, v, vbs, vrs, nrows, K, n, red);
}
