// Package cu binds the CUDA driver API, cuBLAS, cuSOLVER and NVRTC at run time, without cgo and without any CUDA
// header or library at build time.
//
// The libraries are opened with dlopen through github.com/ebitengine/purego, every entry point is resolved with dlsym
// into a function pointer when the library is loaded, and calls go through purego.SyscallN. So the CUDA backend is
// compiled, vetted and unit-tested on machines with no CUDA at all (CGO_ENABLED=0 included), and one static binary
// runs on a GPU machine that has only the driver and the CUDA runtime libraries. A library or symbol that cannot be
// found gives an error wrapping [ErrUnavailable] that names the paths tried or the symbol, so callers can fall back
// to another backend.
//
// # Libraries
//
// [SearchDirs] lists the folders searched, in order; each library is tried there under its sonames, newest first,
// and then by bare soname through the dynamic linker's own search:
//
//	libcuda.so.1                                            (driver; CUDA 11, 12 and 13 alike)
//	libcublas.so.13, libcublas.so.12, libcublas.so.11
//	libcusolver.so.12, libcusolver.so.11                   (cuSOLVER 12 ships with CUDA 13, 11 with CUDA 11 and 12)
//	libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so.11.2
//
// GEOVB_LIBCUDA, GEOVB_LIBCUBLAS, GEOVB_LIBCUSOLVER and GEOVB_LIBNVRTC name one library by full path and replace the
// search for it. Libraries are never unloaded: CUDA libraries keep threads and global state that do not survive
// dlclose.
//
// Only entry points whose ABI is the same from CUDA 11 to CUDA 13 are bound: the _v2 names of the driver calls, the
// primary context (cuDevicePrimaryCtxRetain and cuCtxSetCurrent, never cuCtxCreate, whose CUDA 13 form changed), no
// managed memory.
//
// # Threads and calls
//
// A [Device] owns one goroutine locked to an OS thread (a [Thread]), because the current CUDA context is per OS
// thread and goroutines migrate between threads. [Device.Do] sends a closure to that goroutine and waits for it;
// [Device.Post] queues one without waiting. Every other Device method must be called inside such a closure and
// does not lock on its own. Each Do is a round trip between two threads (microseconds; 9–35 µs on a virtual
// machine), a Post a fraction of a microsecond, and each call inside either costs about 100 ns on top of the
// library: batch many calls into one closure, and post those whose outcome the caller need not wait for.
//
// # Conventions
//
// Matrices passed to the cuBLAS and cuSOLVER wrappers are in the libraries' own column-major convention; the backend
// does the row-major mapping. Sizes, leading dimensions and strides are int and counted in elements, byte counts are
// int64; sizes must fit the libraries' 32-bit int. cuBLAS runs in host pointer mode (alpha and beta are read from
// host memory before the call returns). Every failing status becomes an [*Error] naming the call.
//
// # Kernels
//
// Kernels are CUDA C compiled by NVRTC for the device's architecture on first use ([Device.Module]) and cached on
// disk, keyed by a hash of the name, source, options, architecture and NVRTC version. [LoadNVRTC] gives NVRTC alone,
// so tests compile every kernel on machines without a GPU.
//
// # Scratch slots
//
// [Device.Scratch] keeps eight reusable device buffers. Slots 0 to 5 belong to the backend; the cuSOLVER wrappers
// take their workspaces from slot 6 (factorisations: Dpotrf, Dgeqrf, Dorgqr) and slot 7 (eigensolvers: Dsyevd,
// DsyevjBatched).
package cu
