// The natural gradient of the means of scalar Gaussian Markov chains (backend/chain.go; paper 004 eq. 20, notes
// §2.4). chain_natgrad: one thread per chain running the two sequential recurrences:
//   backward y_t = g_t + s̆_{t+1}·y_{t+1} (y_{n−1} = g_{n−1}), forward g̃_t = s̊_t·y_t + s̆_t·g̃_{t−1} (g̃_0 = s̊_0·y_0).
// The operands are batch×K×n tensors; chain c = b·K + i (c < nchains = batch·K) is row i of matrix b, at
// ptr + b·bs + i·rs. y is kept in dst between the passes, so dst must not share memory with breve or ring (the Go
// side then runs the kernel into scratch); it may alias g, each g_t being read before y_t is written.
//
// Launch: block (256, 1, 1), no shared memory, grid min(ceil(nchains / 256), 2²⁰) in x; a grid-stride loop covers
// the rest.

extern "C" __global__ void __launch_bounds__(256)
chain_natgrad(double* dst, long long dbs, long long drs, const double* g, long long gbs, long long grs,
              const double* breve, long long bbs, long long brs, const double* ring, long long rbs, long long rrs,
              long long nchains, long long K, long long n) {
    for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < nchains;
         c += (long long)gridDim.x * blockDim.x) {
        long long b = c / K, i = c - b * K;
        double* y = dst + b * dbs + i * drs;
        const double* gc = g + b * gbs + i * grs;
        const double* bc = breve + b * bbs + i * brs;
        const double* rc = ring + b * rbs + i * rrs;
        double a = gc[n - 1];
        y[n - 1] = a;
        for (long long t = n - 2; t >= 0; t--) {
            a = fma(bc[t + 1], a, gc[t]);
            y[t] = a;
        }
        a = rc[0] * y[0];
        y[0] = a;
        for (long long t = 1; t < n; t++) {
            a = fma(bc[t], a, rc[t] * y[t]);
            y[t] = a;
        }
    }
}

// chain_natgrad_warp: the same recurrences with one warp per chain, for chains long enough to fill a warp. Each
// recurrence x_t = a_t·x_{t−1} + c_t (x before the first step 0) runs over tiles of 32 steps: lane l takes one step
// of the tile, the tile's affine maps x ↦ a·x + c are composed by a shuffle scan (5 rounds of Hillis–Steele) and
// applied to the carry, the last lane's x, from the previous tile. The loads of a tile are contiguous and do not
// wait for the carry, so a chain costs about 2⌈n/32⌉ scans instead of 2n dependent loads. Backward: step u = 32k + l
// is t = n−1−u with a = s̆_{t+1} (0 at t = n−1), c = g_t; forward: t = 32k + l with a = s̆_t (0 at t = 0),
// c = s̊_t·y_t. s̆_0 is never read, as in chain_natgrad. The same aliasing rules hold (each lane reads g_t, then
// writes y_t of the same t; __syncwarp orders the backward pass's stores before the forward pass's loads).
//
// Launch: block (256, 1, 1), no shared memory, grid min(ceil(nchains / 8), 2²⁰) in x; warp w of the grid takes
// chains w, w + warps, …

__device__ __forceinline__ double chain_affine_scan(double a, double c, double carry, int lane) {
    for (int off = 1; off < 32; off <<= 1) {
        double ap = __shfl_up_sync(0xffffffffu, a, off);
        double cp = __shfl_up_sync(0xffffffffu, c, off);
        if (lane >= off) {
            c = fma(a, cp, c);
            a *= ap;
        }
    }
    return fma(a, carry, c);
}

extern "C" __global__ void __launch_bounds__(256)
chain_natgrad_warp(double* dst, long long dbs, long long drs, const double* g, long long gbs, long long grs,
                   const double* breve, long long bbs, long long brs, const double* ring, long long rbs,
                   long long rrs, long long nchains, long long K, long long n) {
    const int lane = threadIdx.x & 31;
    const long long warps = (long long)gridDim.x * (blockDim.x >> 5);
    for (long long c = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; c < nchains; c += warps) {
        long long b = c / K, i = c - b * K;
        double* y = dst + b * dbs + i * drs;
        const double* gc = g + b * gbs + i * grs;
        const double* bc = breve + b * bbs + i * brs;
        const double* rc = ring + b * rbs + i * rrs;
        double carry = 0;
        for (long long u0 = 0; u0 < n; u0 += 32) {
            long long t = n - 1 - (u0 + lane);
            double a = 1, v = 0;
            if (t >= 0) {
                v = gc[t];
                a = t + 1 < n ? bc[t + 1] : 0;
            }
            double x = chain_affine_scan(a, v, carry, lane);
            if (t >= 0) y[t] = x;
            carry = __shfl_sync(0xffffffffu, x, 31);
        }
        __syncwarp();
        carry = 0;
        for (long long t0 = 0; t0 < n; t0 += 32) {
            long long t = t0 + lane;
            double a = 1, v = 0;
            if (t < n) {
                v = rc[t] * y[t];
                a = t > 0 ? bc[t] : 0;
            }
            double x = chain_affine_scan(a, v, carry, lane);
            if (t < n) y[t] = x;
            carry = __shfl_sync(0xffffffffu, x, 31);
        }
    }
}
