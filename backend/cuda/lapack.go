package cuda

import (
	"unsafe"

	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/cuda/internal/cu"
	"github.com/geovb/geovb/tensor"
)

// readInfo copies n int32 status words from the device (waiting for the stream) and returns the index of the first
// non-zero one and its value, or -1.
func (b *Backend) readInfo(info cu.DevPtr, n int) (int, int32, error) {
	host := make([]int32, n)
	if err := b.gpu.DtoH(unsafe.Pointer(&host[0]), info, int64(n)*4); err != nil {
		return -1, 0, err
	}
	for i, v := range host {
		if v != 0 {
			return i, v, nil
		}
	}
	return -1, 0, nil
}

// Potrf overwrites each SPD matrix of a (lower triangle read) with its lower Cholesky factor: the lower triangle is
// mirrored onto the upper one, cuSOLVER factors the column-major lower triangle (the row-major upper one) in one
// batched call, and the factor is moved to the row-major lower triangle with the upper one zeroed.
func (b *Backend) Potrf(a *tensor.Tensor) error {
	const op = "potrf"
	if err := backend.CheckNotNil(op, []string{"a"}, a); err != nil {
		return err
	}
	if err := backend.CheckSquare(op, "a", a); err != nil {
		return err
	}
	if err := b.ownsNamed(op, []string{"a"}, a); err != nil {
		return err
	}
	n, nb := a.Rows(), a.Batch()
	if n == 0 || nb == 0 {
		return nil
	}
	bad, code := -1, int32(0)
	err := b.do(func() error {
		v := b.viewOf(a)
		B, N := int64(nb), int64(n)
		if err := b.launch1D("core", "tri_mirror_lower", B*N*N, v.p, v.bs, v.rs, B, N); err != nil {
			return err
		}
		arr, err := b.pointerArrays(a)
		if err != nil {
			return err
		}
		info, err := b.gpu.Scratch(slotPack, int64(nb)*4)
		if err != nil {
			return err
		}
		if err := b.gpu.DpotrfBatched(cu.Lower, n, arr, ld(a), info, nb); err != nil {
			return err
		}
		if err := b.launch1D("core", "tri_upper_to_lower", B*N*N, v.p, v.bs, v.rs, B, N); err != nil {
			return err
		}
		if err := b.launch1D("core", "chol_check", B, info, v.p, v.bs, v.rs, B, N); err != nil {
			return err
		}
		bad, code, err = b.readInfo(info, nb)
		return err
	})
	if err != nil {
		return backend.Errorf(op, "a", err, "%v", a.Shape())
	}
	if bad >= 0 {
		return backend.BatchErrorf(op, "a", bad, backend.ErrNotPositiveDefinite,
			"Cholesky factorisation of a %d×%d matrix failed (leading minor %d)", n, n, code)
	}
	return nil
}

// Potrs solves A·X = B in place in b given the lower Cholesky factor l of A: two batched triangular solves
// (cuSOLVER's batched solve takes one right-hand side only).
func (b *Backend) Potrs(l, bm *tensor.Tensor) error {
	if err := backend.CheckPotrs(l, bm); err != nil {
		return err
	}
	if err := b.Trsm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, 1, l, bm); err != nil {
		return err
	}
	return b.Trsm(blas.Left, blas.Lower, blas.Trans, blas.NonUnit, 1, l, bm)
}

// QR computes the sign-fixed thin QR of each matrix with cuSOLVER's Householder QR, one matrix at a time: pack to a
// column-major block, geqrf, read R and the signs of its diagonal, orgqr, write Q with its columns sign-fixed. The
// batched hot operation (backend.QRRetract) has its own one-launch kernel; this is the general primitive.
func (b *Backend) QR(q, r, a *tensor.Tensor) error {
	const op = "qr"
	if err := backend.CheckQR(q, r, a); err != nil {
		return err
	}
	if err := b.ownsNamed(op, []string{"q", "r", "a"}, q, r, a); err != nil {
		return err
	}
	n, p, nb := a.Rows(), a.Cols(), a.Batch()
	if n == 0 || p == 0 || nb == 0 {
		return nil
	}
	N, P := int64(n), int64(p)
	err := b.do(func() error {
		// Slot layout: the n×p block, then tau (p), the signs (p) and one info word.
		buf, err := b.gpu.Scratch(slotPack, 8*(N*P+2*P+1))
		if err != nil {
			return err
		}
		tau := buf + cu.DevPtr(8*N*P)
		sgn := tau + cu.DevPtr(8*P)
		info := sgn + cu.DevPtr(8*P)
		for i := 0; i < nb; i++ {
			ai := b.ptr(a) + cu.DevPtr(8*a.BatchStride()*i)
			if err := b.launch1D("core", "pack_colmajor", N*P, buf, ai, int64(a.RowStride()), N, P); err != nil {
				return err
			}
			if err := b.gpu.Dgeqrf(n, p, buf, n, tau, info); err != nil {
				return err
			}
			ri, rrs := cuNil, int64(0)
			if r != nil {
				ri, rrs = b.ptr(r)+cu.DevPtr(8*r.BatchStride()*i), int64(r.RowStride())
			}
			if err := b.launch1D("core", "qr_r_sign", P*P, ri, rrs, sgn, buf, N, P); err != nil {
				return err
			}
			if err := b.gpu.Dorgqr(n, p, p, buf, n, tau, info); err != nil {
				return err
			}
			qi := b.ptr(q) + cu.DevPtr(8*q.BatchStride()*i)
			if err := b.launch1D("core", "qr_q_out", N*P, qi, int64(q.RowStride()), buf, N, sgn, N, P); err != nil {
				return err
			}
		}
		bad, _, err := b.readInfo(info, 1)
		if err == nil && bad >= 0 {
			return backend.Errorf(op, "a", backend.ErrDomain, "cuSOLVER reported an invalid argument")
		}
		return err
	})
	if err != nil {
		return backend.Errorf(op, "a", err, "%v", a.Shape())
	}
	return nil
}

// syevjMax is the largest order cuSOLVER's batched Jacobi eigen-solver accepts.
const syevjMax = 32

// Syev computes eigenvalues (ascending) and optionally eigenvectors of each symmetric matrix (lower triangle
// read): the matrices are packed column-major with both triangles from the lower one, solved by batched Jacobi
// (order ≤ 32) or by the divide-and-conquer solver one matrix at a time, and unpacked into w and v.
func (b *Backend) Syev(w, v, a *tensor.Tensor) error {
	const op = "syev"
	if err := backend.CheckSyev(w, v, a); err != nil {
		return err
	}
	if err := b.ownsNamed(op, []string{"w", "v", "a"}, w, v, a); err != nil {
		return err
	}
	n, nb := a.Rows(), a.Batch()
	if n == 0 || nb == 0 {
		return nil
	}
	N, B := int64(n), int64(nb)
	bad := -1
	err := b.do(func() error {
		// Slot layout: nb packed n×n blocks, nb·n eigenvalues, nb info words.
		buf, err := b.gpu.Scratch(slotPack, 8*(B*N*N+B*N)+4*B)
		if err != nil {
			return err
		}
		wb := buf + cu.DevPtr(8*B*N*N)
		info := wb + cu.DevPtr(8*B*N)
		av := b.viewOf(a)
		if err := b.launch1D("core", "pack_sym", B*N*N, buf, av.p, av.bs, av.rs, B, N); err != nil {
			return err
		}
		if n <= syevjMax {
			if err := b.gpu.DsyevjBatched(v != nil, cu.Lower, n, buf, n, wb, info, nb); err != nil {
				return err
			}
		} else {
			for i := int64(0); i < B; i++ {
				if err := b.gpu.Dsyevd(v != nil, cu.Lower, n, buf+cu.DevPtr(8*i*N*N), n, wb+cu.DevPtr(8*i*N),
					info+cu.DevPtr(4*i)); err != nil {
					return err
				}
			}
		}
		wv, vv := b.viewOf(w), b.viewOf(v)
		if err := b.launch1D("core", "unpack_eig", B*N*N, wv.p, wv.bs, wv.rs, wb, vv.p, vv.bs, vv.rs, buf, B, N); err != nil {
			return err
		}
		bad, _, err = b.readInfo(info, nb)
		return err
	})
	if err != nil {
		return backend.Errorf(op, "a", err, "%v", a.Shape())
	}
	if bad >= 0 {
		return backend.BatchErrorf(op, "a", bad, backend.ErrNoConvergence, "eigen-solver did not converge (%d×%d)", n, n)
	}
	return nil
}
