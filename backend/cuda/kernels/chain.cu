// The natural gradient of the means of scalar Gaussian Markov chains (backend/chain.go; paper 004 eq. 20, notes
// §2.4), one thread per chain running the two sequential recurrences:
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
