// Counter-based random fills: the GPU half of package rng (rng/philox.go), producing the same numbers.
//
// A stream is Philox4x32-10 with the 128-bit counter (block, stream) — block in the low 64 bits — and the 64-bit
// key seed. Draw n uses block n >> 1: a uniform takes words (0, 1) when n is even and (2, 3) when odd; a normal is
// the cosine (n even) or sine (n odd) half of the Box–Muller pair of the block's two uniforms u1 = unit(w0, w1),
// u2 = unit(w2, w3). Words, uniforms and normals are bit-identical to the CPU's: the Box–Muller transform uses the
// polynomials of rng/boxmuller.go, not the device's maths library, and every floating-point step is written with an
// explicit round-to-nearest intrinsic (__fma_rn where Go calls math.FMA, __dmul_rn/__dadd_rn elsewhere) so that
// nothing is contracted or reordered: the expressions are, operation for operation, those of rng (toUnit,
// BoxMuller, logUnit, sincos2Pi).

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u


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

// rng.toUnit: 53 random bits mapped to the open interval (0, 1); x = 2^53 - 1 rounds to 1 and is capped at the
// largest double below 1.
__device__ __forceinline__ double philox_unit(unsigned hi, unsigned lo) {
    const unsigned long long x = (((unsigned long long)hi << 32) | (unsigned long long)lo) >> 11;
    return fmin(__dmul_rn(__dadd_rn(__ull2double_rn(x), 0.5), 0x1p-53), 0x1.fffffffffffffp-1);
}

// rng.logUnit: ln u for u in (0, 1). u = 2^e·m, m in [√½, √2), f = m − 1, s = f/(2 + f),
// ln u = e·ln2Hi + (f − (s·(f − T(s²)) − e·ln2Lo)), T(z) = Σ_{k=1..10} 2z^k/(2k+1).
__device__ __forceinline__ double philox_log_unit(double u) {
    const unsigned long long bits = (unsigned long long)__double_as_longlong(u);
    long long e = (long long)(bits >> 52) - 1023;
    double m = __longlong_as_double((long long)((bits & ((1ull << 52) - 1)) | (1023ull << 52)));
    if (m > 1.4142135623730951) {
        m = __longlong_as_double((long long)((bits & ((1ull << 52) - 1)) | (1022ull << 52)));
        e++;
    }
    const double f = __dsub_rn(m, 1.0);
    const double s = __ddiv_rn(f, __dadd_rn(2.0, f));
    const double z = __dmul_rn(s, s);
    double p = __fma_rn(z, 0.095238095238095233, 0.10526315789473684);
    p = __fma_rn(z, p, 0.11764705882352941);
    p = __fma_rn(z, p, 0.13333333333333333);
    p = __fma_rn(z, p, 0.15384615384615385);
    p = __fma_rn(z, p, 0.18181818181818182);
    p = __fma_rn(z, p, 0.22222222222222221);
    p = __fma_rn(z, p, 0.2857142857142857);
    p = __fma_rn(z, p, 0.40000000000000002);
    p = __fma_rn(z, p, 0.66666666666666663);
    const double t = __dmul_rn(z, p);
    const double fe = __ll2double_rn(e);
    const double corr = __fma_rn(s, __dsub_rn(f, t), -__dmul_rn(fe, -4.2009150726810846e-11));
    return __fma_rn(fe, 0x1.62e42ffp-01, __dsub_rn(f, corr));
}

// rng.sincos2Pi: sin and cos of 2πu for u in [0, 1), from 4u = q + x (exact), |x| ≤ ½, and the Taylor
// polynomials of sin(πx/2), cos(πx/2); the quadrant q & 3 picks signs and swaps.
__device__ __forceinline__ void philox_sincos_2pi(double u, double& sn, double& cs) {
    const double t = __dmul_rn(4.0, u);
    const long long q = __double2ll_rz(__dadd_rn(t, 0.5));
    const double x = __dsub_rn(t, __ll2double_rn(q));
    const double z = __dmul_rn(x, x);
    double ps = __fma_rn(z, 6.0669357311061955e-12, -6.6880351098114677e-10);
    ps = __fma_rn(z, ps, 5.6921729219679267e-08);
    ps = __fma_rn(z, ps, -3.5988432352120852e-06);
    ps = __fma_rn(z, ps, 0.00016044118478735983);
    ps = __fma_rn(z, ps, -0.0046817541353186883);
    ps = __fma_rn(z, ps, 0.079692626246167048);
    ps = __fma_rn(z, ps, -0.64596409750624628);
    const double sx = __fma_rn(x, 1.5707963267948966, __dmul_rn(x, __fma_rn(z, ps, 6.123233995736766e-17)));
    double pc = __fma_rn(z, -5.2944002007346235e-13, 6.5659631149794728e-11);
    pc = __fma_rn(z, pc, -6.3866030837918521e-09);
    pc = __fma_rn(z, pc, 4.7108747788181717e-07);
    pc = __fma_rn(z, pc, -2.5202042373060607e-05);
    pc = __fma_rn(z, pc, 0.00091926027483942659);
    pc = __fma_rn(z, pc, -0.020863480763352961);
    pc = __fma_rn(z, pc, 0.25366950790104803);
    pc = __fma_rn(z, pc, -1.2337005501361697);
    const double cx = __fma_rn(z, pc, 1.0);
    switch (q & 3) {
    case 0: sn = sx; cs = cx; break;
    case 1: sn = cx; cs = -sx; break;
    case 2: sn = -sx; cs = -cx; break;
    default: sn = -cx; cs = sx; break;
    }
}

// philox_fill writes draws of the stream (seed, stream) into the strided batched view dst (batch × rows × cols,
// element (b, i, j) at dst[b·bstride + i·rstride + j]): element (b, i, j) gets draw offset + (b·rows + i)·cols + j,
// as rng.Counter.FillNormal / FillUniform number them. normal ≠ 0 gives standard normals, else uniforms on (0, 1).
// contig ≠ 0 says that element L = (b·rows + i)·cols + j sits at dst[L] (the view is contiguous), which skips the
// index divisions. When rowscale is not null, the value of row r = b·rows + i is multiplied by
// 1/sqrt(rowscale[r·rsinc]) (the x = Ψ^{-1/2} z step of the low-rank ensemble sampler, fused into the fill).
//
// One thread per Philox block: thread t computes block (offset >> 1) + t once and writes the one or two draws of
// that block that fall in [offset, offset + total). Draw numbers are taken modulo 2⁶⁴ (rng.Counter), so block numbers
// wrap at 2⁶³ and positions are counted from offset rather than compared with it. Launch: block (256, 1, 1), grid
// (min(ceil(nblk / 256), 2²⁰), 1, 1) with nblk = ((offset mod 2) + total − 1) / 2 + 1 (a grid-stride loop covers the
// rest), no shared memory.
extern "C" __global__ void __launch_bounds__(256)
    philox_fill(double* dst, long long batch, long long rows, long long cols, long long bstride, long long rstride,
                int contig, unsigned long long seed, unsigned long long stream, unsigned long long offset, int normal,
                const double* rowscale, long long rsinc) {
    if (batch <= 0 || rows <= 0 || cols <= 0) {
        return;
    }
    const unsigned long long total = (unsigned long long)batch * (unsigned long long)rows * (unsigned long long)cols;
    const unsigned long long first = offset >> 1, odd = offset & 1;
    const unsigned long long nblk = ((odd + total - 1) >> 1) + 1;
    const unsigned k0 = (unsigned)seed, k1 = (unsigned)(seed >> 32);
    const unsigned s0 = (unsigned)stream, s1 = (unsigned)(stream >> 32);
    const unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; t < nblk; t += step) {
        const unsigned long long blk = (first + t) & 0x7fffffffffffffffULL;
        unsigned c0 = (unsigned)blk, c1 = (unsigned)(blk >> 32), c2 = s0, c3 = s1;
        philox10(c0, c1, c2, c3, k0, k1);
        double v0, v1;
        if (normal) {
            // rng.BoxMuller: r = √(−2 ln u1); (cos, sin)(2π u2).
            const double r = __dsqrt_rn(__dmul_rn(-2.0, philox_log_unit(philox_unit(c0, c1))));
            double s, c;
            philox_sincos_2pi(philox_unit(c2, c3), s, c);
            v0 = __dmul_rn(r, c);
            v1 = __dmul_rn(r, s);
        } else {
            v0 = philox_unit(c0, c1);
            v1 = philox_unit(c2, c3);
        }
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const unsigned long long q = 2 * t + (unsigned long long)h; // the draw number minus 2·first
            if (q < odd || q - odd >= total) {
                continue;
            }
            const long long L = (long long)(q - odd); // row-major position in the view
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
