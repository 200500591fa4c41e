// Counter-based random fills: the GPU half of package rng (rng/philox.go), producing the same numbers.
//
// A stream is Philox4x32-10 with the 128-bit counter (block, stream) — block in the low 64 bits — and the 64-bit
// key seed. Draw n uses block n >> 1: a uniform takes words (0, 1) when n is even and (2, 3) when odd; a normal is
// the cosine (n even) or sine (n odd) half of the Box–Muller pair of the block's two uniforms u1 = unit(w0, w1),
// u2 = unit(w2, w3). The integer words and the uniforms are bit-identical to the CPU's; normals go through the
// device's log, sin and cos and agree to a few ulps. Every floating-point step is written with an explicit
// round-to-nearest intrinsic so that no multiply-add is contracted: the expressions are, operation for
// operation, those of rng/philox.go (toUnit, FillNormal).

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

// 2π rounded to double: the value of the Go constant expression 2 * math.Pi.
#define PHILOX_TWO_PI 6.283185307179586476925286766559

// One Philox round (rng.philoxRound): two 32×32→64-bit products mixed with the other words and the round key.
__device__ __forceinline__ void philox_round(unsigned& c0, unsigned& c1, unsigned& c2, unsigned& c3, unsigned k0,
                                             unsigned k1) {
    const unsigned long long p0 = (unsigned long long)c0 * PHILOX_M0;
    const unsigned long long p1 = (unsigned long long)c2 * PHILOX_M1;
    const unsigned n0 = (unsigned)(p1 >> 32) ^ c1 ^ k0;
    const unsigned n1 = (unsigned)p1;
    const unsigned n2 = (unsigned)(p0 >> 32) ^ c3 ^ k1;
    const unsigned n3 = (unsigned)p0;
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
}

// Ten rounds with the key schedule k + r·W (mod 2³²), as rng.philox10.
__device__ __forceinline__ void philox10(unsigned& c0, unsigned& c1, unsigned& c2, unsigned& c3, unsigned k0,
                                         unsigned k1) {
#pragma unroll
    for (unsigned r = 0; r < 10; r++) {
        philox_round(c0, c1, c2, c3, k0 + r * PHILOX_W0, k1 + r * PHILOX_W1);
    }
}

// rng.toUnit: 53 random bits mapped to the open interval (0, 1).
__device__ __forceinline__ double philox_unit(unsigned hi, unsigned lo) {
    const unsigned long long x = (((unsigned long long)hi << 32) | (unsigned long long)lo) >> 11;
    return __dmul_rn(__dadd_rn(__ull2double_rn(x), 0.5), 0x1p-53);
}

// philox_fill writes draws of the stream (seed, stream) into the strided batched view dst (batch × rows × cols,
// element (b, i, j) at dst[b·bstride + i·rstride + j]): element (b, i, j) gets draw offset + (b·rows + i)·cols + j,
// as rng.Counter.FillNormal / FillUniform number them. normal ≠ 0 gives standard normals, else uniforms on (0, 1).
// contig ≠ 0 says that element L = (b·rows + i)·cols + j sits at dst[L] (the view is contiguous), which skips the
// index divisions. When rowscale is not null, the value of row r = b·rows + i is multiplied by
// 1/sqrt(rowscale[r·rsinc]) (the x = Ψ^{-1/2} z step of the low-rank ensemble sampler, fused into the fill).
//
// One thread per Philox block: thread t computes block (offset >> 1) + t once and writes the one or two draws of
// that block that fall in [offset, offset + total). Launch: block (256, 1, 1), grid (min(ceil(nblk / 256), 2²⁰), 1, 1)
// with nblk = ((offset + total − 1) >> 1) − (offset >> 1) + 1 (a grid-stride loop covers the rest), no shared
// memory.
extern "C" __global__ void __launch_bounds__(256)
    philox_fill(double* dst, long long batch, long long rows, long long cols, long long bstride, long long rstride,
                int contig, unsigned long long seed, unsigned long long stream, unsigned long long offset, int normal,
                const double* rowscale, long long rsinc) {
    if (batch <= 0 || rows <= 0 || cols <= 0) {
        return;
    }
    const unsigned long long total = (unsigned long long)batch * (unsigned long long)rows * (unsigned long long)cols;
    const unsigned long long first = offset >> 1;
    const unsigned long long nblk = ((offset + total - 1) >> 1) - first + 1;
    const unsigned k0 = (unsigned)seed, k1 = (unsigned)(seed >> 32);
    const unsigned s0 = (unsigned)stream, s1 = (unsigned)(stream >> 32);
    const unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; t < nblk; t += step) {
        const unsigned long long blk = first + t;
        unsigned c0 = (unsigned)blk, c1 = (unsigned)(blk >> 32), c2 = s0, c3 = s1;
        philox10(c0, c1, c2, c3, k0, k1);
        double v0, v1;
        if (normal) {
            // rng.FillNormal: r = √(−2 log u1); (sin, cos)(2π u2).
            const double r = __dsqrt_rn(__dmul_rn(-2.0, log(philox_unit(c0, c1))));
            double s, c;
            sincos(__dmul_rn(PHILOX_TWO_PI, philox_unit(c2, c3)), &s, &c);
            v0 = __dmul_rn(r, c);
            v1 = __dmul_rn(r, s);
        } else {
            v0 = philox_unit(c0, c1);
            v1 = philox_unit(c2, c3);
        }
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const unsigned long long n = 2 * blk + (unsigned long long)h; // the draw number
            if (n < offset || n - offset >= total) {
                continue;
            }
            const long long L = (long long)(n - offset); // row-major position in the view
            const long long r = L / cols;                // row of the batch: b·rows + i
            long long a;
            if (contig) {
                a = L;
            } else {
                const long long j = L - r * cols;
                const long long b = r / rows;
                const long long i = r - b * rows;
                a = b * bstride + i * rstride + j;
            }
            double v = h == 0 ? v0 : v1;
            if (rowscale != 0) {
                v = __dmul_rn(v, __ddiv_rn(1.0, __dsqrt_rn(rowscale[r * rsinc])));
            }
            dst[a] = v;
        }
    }
}
