// Core kernels of the CUDA backend: the element-wise primitives, copies between strided views, reductions and the
// small fix-ups around cuBLAS/cuSOLVER calls (triangles, packing for the batched eigen-solver).
//
// Every operand is a strided batched view: element (b, i, j) of a view (p, bs, rs) lives at p[b*bs + i*rs + j]. A
// batch stride of 0 broadcasts one matrix over the batch. Sizes are 64-bit (long long): d×p tensors at d = 1e6 pass
// 2^31 elements. Unless a kernel says otherwise it is launched on a 1-D grid of 256-thread blocks and walks the
// batch·rows·cols elements with a grid-stride loop, so any grid size is correct.


// at returns the offset of element k = (b·rows + i)·cols + j of a view.
__device__ __forceinline__ long long at(long long k, long long rows, long long cols, long long bs, long long rs) {
    long long j = k % cols;
    long long r = k / cols;
    long long i = r % rows;
    long long b = r / rows;
    return b * bs + i * rs + j;
}

#define GRID_STRIDE(k, n) for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < (n); k += (long long)blockDim.x * gridDim.x)

extern "C" __global__ void ew_fill(double* d, long long dbs, long long drs, long long B, long long R, long long C, double v) {
    GRID_STRIDE(k, B * R * C) { d[at(k, R, C, dbs, drs)] = v; }
}

// ew_copy copies x into d bit for bit (x may broadcast with xbs = 0).
extern "C" __global__ void ew_copy(double* d, long long dbs, long long drs, const double* x, long long xbs, long long xrs, long long B, long long R,
                                   long long C) {
    GRID_STRIDE(k, B * R * C) { d[at(k, R, C, dbs, drs)] = x[at(k, R, C, xbs, xrs)]; }
}

// ew_axpby: d = alpha·x + beta·y; hasY = 0 gives d = alpha·x (y is not read).
extern "C" __global__ void ew_axpby(double* d, long long dbs, long long drs, const double* x, long long xbs, long long xrs, const double* y,
                                    long long ybs, long long yrs, long long B, long long R, long long C, double alpha, double beta, int hasY) {
    GRID_STRIDE(k, B * R * C) {
        double v = alpha * x[at(k, R, C, xbs, xrs)];
        if (hasY) v += beta * y[at(k, R, C, ybs, yrs)];
        d[at(k, R, C, dbs, drs)] = v;
    }
}

// ew_muldiv: d = x ⊙ y (div = 0) or x ⊘ y (div = 1).
extern "C" __global__ void ew_muldiv(double* d, long long dbs, long long drs, const double* x, long long xbs, long long xrs, const double* y,
                                     long long ybs, long long yrs, long long B, long long R, long long C, int div) {
    GRID_STRIDE(k, B * R * C) {
        double a = x[at(k, R, C, xbs, xrs)], b = y[at(k, R, C, ybs, yrs)];
        d[at(k, R, C, dbs, drs)] = div ? a / b : a * b;
    }
}

// unary evaluates backend.UnaryOp f; the numbering and the formulas follow backend/cpu's Unary exactly.
__device__ double unary(int f, double x) {
    switch (f) {
    case 0: return x;
    case 1: return -x;
    case 2: return fabs(x);
    case 3: return x * x;
    case 4: return sqrt(x);
    case 5: return 1.0 / x;
    case 6: return exp(x);
    case 7: return log(x);
    case 8: return log1p(x);
    case 9:
        if (x >= 0) return 1.0 / (1.0 + exp(-x));
        { double e = exp(x); return e / (1.0 + e); }
    case 10: return fmax(x, 0.0) + log1p(exp(-fabs(x)));
    case 11: return tanh(x);
    case 12: return sin(x);
    case 13: return cos(x);
    case 14:
        if (fabs(x) < 1e-4) { double x2 = x * x; return 1.0 - x2 / 6.0 * (1.0 - x2 / 20.0); }
        return sin(x) / x;
    case 15:
        if (x >= 0) return 1.0;
        if (x < 0) return 0.0;
        return x;
    }
    return __longlong_as_double(0x7ff8000000000000LL);
}

// ew_map: d = f(alpha·x).
extern "C" __global__ void ew_map(double* d, long long dbs, long long drs, const double* x, long long xbs, long long xrs, long long B, long long R, long long C,
                                  int f, double alpha) {
    GRID_STRIDE(k, B * R * C) { d[at(k, R, C, dbs, drs)] = unary(f, alpha * x[at(k, R, C, xbs, xrs)]); }
}

// ew_scale: d[b,i,j] = x[b,i,j]·v, with v = vec[b·vbs + i] (byCol = 0, ScaleRows; vec is batch×rows×1 with row
// stride vrs) or v = vec[b·vbs + j] (byCol = 1, ScaleCols; vec is batch×1×cols).
extern "C" __global__ void ew_scale(double* d, long long dbs, long long drs, const double* x, long long xbs, long long xrs, const double* vec,
                                    long long vbs, long long vrs, long long B, long long R, long long C, int byCol) {
    GRID_STRIDE(k, B * R * C) {
        long long j = k % C, r = k / C, i = r % R, b = r / R;
        double v = byCol ? vec[b * vbs + j] : vec[b * vbs + i * vrs];
        d[b * dbs + i * drs + j] = x[b * xbs + i * xrs + j] * v;
    }
}

// Reductions. op: 0 sum, 1 max, 2 min, 3 sum of squares (backend.ReduceOp). NaN propagates through max and min as
// in backend/cpu (a comparison with NaN keeps the NaN once it is the running value, and a NaN operand replaces it).
__device__ __forceinline__ double rinit(int op) {
    if (op == 1) return -__longlong_as_double(0x7ff0000000000000LL);
    if (op == 2) return __longlong_as_double(0x7ff0000000000000LL);
    return 0.0;
}
__device__ __forceinline__ double rstep(int op, double acc, double v) {
    switch (op) {
    case 1: return (v > acc || v != v) && acc == acc ? v : acc;
    case 2: return (v < acc || v != v) && acc == acc ? v : acc;
    case 3: return acc + v * v;
    }
    return acc + v;
}
__device__ __forceinline__ double rjoin(int op, double a, double b) {
    if (op == 1) return (b > a || b != b) && a == a ? b : a;
    if (op == 2) return (b < a || b != b) && a == a ? b : a;
    return a + b;
}

// warp_join combines the 32 lanes' values; every lane gets the result.
__device__ __forceinline__ double warp_join(int op, double v) {
    for (int o = 16; o > 0; o >>= 1) v = rjoin(op, v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// reduce_rows_of: one warp per row (b, i): d[b·dbs + i·drs] = op over j of x[b,i,j] (AxisCols, and RowDots with
// y != 0: Σ x·y). Launch: blocks of 256 threads (8 warps); the warps stride over the B·R rows.
extern "C" __global__ void reduce_row(double* d, long long dbs, long long drs, const double* x, long long xbs, long long xrs, const double* y,
                                      long long ybs, long long yrs, long long B, long long R, long long C, int op) {
    long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    long long nwarps = ((long long)blockDim.x * gridDim.x) >> 5;
    int lane = threadIdx.x & 31;
    for (long long r = warp; r < B * R; r += nwarps) {
        long long b = r / R, i = r % R;
        const double* xr = x + b * xbs + i * xrs;
        double acc = rinit(op);
        if (y) {
            const double* yr = y + b * ybs + i * yrs;
            for (long long j = lane; j < C; j += 32) acc += xr[j] * yr[j];
        } else {
            for (long long j = lane; j < C; j += 32) acc = rstep(op, acc, xr[j]);
        }
        acc = warp_join(op, acc);
        if (lane == 0) d[b * dbs + i * drs] = acc;
    }
}

// reduce_col: one thread per column (b, j), summing down the rows (AxisRows); consecutive threads read consecutive
// columns, so the loads coalesce. d is batch×1×cols: d[b·dbs + j].
extern "C" __global__ void reduce_col(double* d, long long dbs, const double* x, long long xbs, long long xrs, long long B, long long R, long long C,
                                      int op) {
    GRID_STRIDE(k, B * C) {
        long long b = k / C, j = k % C;
        const double* xc = x + b * xbs + j;
        double acc = rinit(op);
        for (long long i = 0; i < R; i++) acc = rstep(op, acc, xc[i * xrs]);
        d[b * dbs + j] = acc;
    }
}

// reduce_all: one block per batch item (grid.x = B, 256 threads): d[b·dbs] = op over the whole matrix b.
extern "C" __global__ void reduce_all(double* d, long long dbs, const double* x, long long xbs, long long xrs, long long R, long long C, int op) {
    __shared__ double part[8];
    long long b = blockIdx.x;
    const double* xb = x + b * xbs;
    double acc = rinit(op);
    for (long long k = threadIdx.x; k < R * C; k += blockDim.x) acc = rstep(op, acc, xb[(k / C) * xrs + k % C]);
    acc = warp_join(op, acc);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x < 32) {
        double v = threadIdx.x < (blockDim.x >> 5) ? part[threadIdx.x] : rinit(op);
        v = warp_join(op, v);
        if (threadIdx.x == 0) d[b * dbs] = v;
    }
}

// add_diag: d[b,i,i] += alpha for the n×n matrices.
extern "C" __global__ void add_diag(double* d, long long dbs, long long drs, long long B, long long n, double alpha) {
    GRID_STRIDE(k, B * n) {
        long long b = k / n, i = k % n;
        d[b * dbs + i * drs + i] += alpha;
    }
}

// symmetrize: each pair i > j gets (d[i,j] + d[j,i])/2 in both places; one thread per element of the strict lower
// triangle, enumerated over the full n×n square (threads above the diagonal do nothing).
extern "C" __global__ void symmetrize(double* d, long long dbs, long long drs, long long B, long long n) {
    GRID_STRIDE(k, B * n * n) {
        long long j = k % n, r = k / n, i = r % n, b = r / n;
        if (i > j) {
            double* m = d + b * dbs;
            double v = 0.5 * (m[i * drs + j] + m[j * drs + i]);
            m[i * drs + j] = v;
            m[j * drs + i] = v;
        }
    }
}

// transpose: d[b,j,i] = x[b,i,j] for the R×C matrices of x (d is C×R, must not alias x).
extern "C" __global__ void transpose(double* d, long long dbs, long long drs, const double* x, long long xbs, long long xrs, long long B, long long R,
                                     long long C) {
    GRID_STRIDE(k, B * R * C) {
        long long j = k % C, r = k / C, i = r % R, b = r / R;
        d[b * dbs + j * drs + i] = x[b * xbs + i * xrs + j];
    }
}

// tri_mirror_lower copies the strict lower triangle onto the upper one (d[j,i] = d[i,j], i > j), so that a routine
// reading the other triangle sees the lower one: row-major "lower" is column-major "upper".
extern "C" __global__ void tri_mirror_lower(double* d, long long dbs, long long drs, long long B, long long n) {
    GRID_STRIDE(k, B * n * n) {
        long long j = k % n, r = k / n, i = r % n, b = r / n;
        if (i > j) d[b * dbs + j * drs + i] = d[b * dbs + i * drs + j];
    }
}

// tri_upper_to_lower moves the upper triangle to the lower one transposed and zeroes the strict upper triangle:
// after cuSOLVER's column-major lower Cholesky the row-major upper triangle holds Lᵀ; this leaves L in row-major
// lower form as the contract wants.
extern "C" __global__ void tri_upper_to_lower(double* d, long long dbs, long long drs, long long B, long long n) {
    GRID_STRIDE(k, B * n * n) {
        long long j = k % n, r = k / n, i = r % n, b = r / n;
        if (i > j) {
            double* m = d + b * dbs;
            m[i * drs + j] = m[j * drs + i];
            m[j * drs + i] = 0.0;
        }
    }
}

// pack_sym writes each symmetric n×n matrix whose lower triangle is in x into a contiguous column-major block
// (p[b·n·n + i + j·n]), both triangles filled from the lower one.
extern "C" __global__ void pack_sym(double* p, const double* x, long long xbs, long long xrs, long long B, long long n) {
    GRID_STRIDE(k, B * n * n) {
        long long i = k % n, r = k / n, j = r % n, b = r / n;
        long long hi = i > j ? i : j, lo = i > j ? j : i;
        p[k] = x[b * xbs + hi * xrs + lo];
    }
}

// unpack_eig writes the eigenvalues (w: contiguous n per batch item) into the view wv (batch×n×1, row stride wrs)
// and, when v != 0, the eigenvectors (the columns of the packed column-major blocks p) into the view v row-major:
// v[b,i,k] = p[b·n·n + i + k·n].
extern "C" __global__ void unpack_eig(double* wv, long long wbs, long long wrs, const double* w, double* v, long long vbs, long long vrs,
                                      const double* p, long long B, long long n) {
    GRID_STRIDE(k, B * n * n) {
        long long i = k % n, r = k / n, c = r % n, b = r / n;
        if (v) v[b * vbs + i * vrs + c] = p[k];
        if (c == 0) wv[b * wbs + i * wrs] = w[b * n + i];
    }
}

// qr_r_sign reads the R factor left in the upper triangle of the column-major n×p block a (leading dimension lda)
// by geqrf, writes sign(R_jj) (+1 for a zero) into s[j] and, when r != 0, the sign-fixed R (row j times s[j]) into
// the row-major p×p view r, zeros below the diagonal. One thread per element of R.
extern "C" __global__ void qr_r_sign(double* r, long long rrs, double* s, const double* a, long long lda, long long p) {
    GRID_STRIDE(k, p * p) {
        long long i = k / p, j = k % p;
        double sg = a[i + i * lda] < 0 ? -1.0 : 1.0;
        if (j == 0) s[i] = sg;
        if (r) r[i * rrs + j] = j >= i ? sg * a[i + j * lda] : 0.0;
    }
}

// qr_q_out writes the explicit column-major Q (n×p, leading dimension lda) from orgqr into the row-major view q
// with column j multiplied by s[j]: q[i,j] = s[j]·a[i + j·lda].
extern "C" __global__ void qr_q_out(double* q, long long qrs, const double* a, long long lda, const double* s, long long n, long long p) {
    GRID_STRIDE(k, n * p) {
        long long i = k / p, j = k % p;
        q[i * qrs + j] = s[j] * a[i + j * lda];
    }
}

// pack_colmajor copies the row-major n×p view x into a contiguous column-major block (leading dimension n).
extern "C" __global__ void pack_colmajor(double* p, const double* x, long long xrs, long long n, long long cols) {
    GRID_STRIDE(k, n * cols) {
        long long i = k % n, j = k / n;
        p[k] = x[i * xrs + j];
    }
}

// chol_check sets info[b] = n + 1 where the Cholesky factor of matrix b has a diagonal entry that is not a finite
// positive number (a NaN in the input leaves cuSOLVER's own info at 0). One thread per batch item.
extern "C" __global__ void chol_check(int* info, const double* d, long long dbs, long long drs, long long B, long long n) {
    GRID_STRIDE(b, B) {
        if (info[b] != 0) continue;
        for (long long i = 0; i < n; i++) {
            double v = d[b * dbs + i * drs + i];
            if (!(v > 0) || v == __longlong_as_double(0x7ff0000000000000LL)) { info[b] = (int)(n + 1); break; }
        }
    }
}
