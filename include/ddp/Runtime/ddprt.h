/*===- ddprt.h - The C ABI of the ddp runtime (libddprt) ----------*- C -*-===*
 *
 * The only header shared by the compiler (the ddp-to-LLVM lowering) and the
 * runtime. Plain C (C11, for _Static_assert) with no dependency. The entry
 * points are declared in RuntimeFunctions.def, one DDPRT_ENTRY_POINT each,
 * so that the lowering's call table and the JIT's symbol table come from
 * the same lines as these prototypes.
 *
 * Conventions (docs/Runtime.md has the full semantics):
 *  - Every entry point but ddprt_init takes the context first and returns a
 *    ddprt_status; DDPRT_OK is 0. Outputs are written through the last
 *    pointer arguments.
 *  - Only scalars, pointers and the small POD struct ddprt_tensor cross the
 *    boundary; no struct is passed by value.
 *  - Buffers live in the backend's memory (host memory on the CPU backend,
 *    device memory on the CUDA backend). A view into a buffer is its base
 *    pointer plus offset * element size: no call is needed to make one.
 *  - Tensors are dense and row-major; a tensor is (data, dtype, numel).
 *  - Every collective runs synchronously when its `handle` argument is NULL
 *    and asynchronously otherwise: it writes a handle that must be consumed
 *    exactly once, by ddprt_wait or ddprt_join.
 *
 *===----------------------------------------------------------------------===*/

#ifndef DDP_RUNTIME_DDPRT_H
#define DDP_RUNTIME_DDPRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define DDPRT_EXPORT __attribute__((visibility("default")))
#else
#define DDPRT_EXPORT
#endif

#ifdef __cplusplus
#define DDPRT_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define DDPRT_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/*===----------------------------------------------------------------------===*
 * Constants
 *===----------------------------------------------------------------------===*/

/* Status codes. */
typedef int32_t ddprt_status;
#define DDPRT_OK 0
#define DDPRT_ERROR_INVALID_ARGUMENT 1 /* a bad argument to an entry point */
#define DDPRT_ERROR_ABI_MISMATCH 2     /* ddprt_init got another ABI version */
#define DDPRT_ERROR_MPI 3              /* an MPI call failed */
#define DDPRT_ERROR_CUDA 4        /* a CUDA runtime or cuBLAS call failed */
#define DDPRT_ERROR_NCCL 5        /* an NCCL call failed */
#define DDPRT_ERROR_NONFINITE 6   /* ddprt_check_finite found NaN or Inf */
#define DDPRT_ERROR_UNAVAILABLE 7 /* backend not built or no device */
#define DDPRT_ERROR_BAD_HANDLE 8  /* unknown, already consumed handle */
#define DDPRT_ERROR_INTERNAL 9

/* Element types. Zero is no type, so that an uninitialised value is caught. */
#define DDPRT_DTYPE_F16 1
#define DDPRT_DTYPE_BF16 2
#define DDPRT_DTYPE_F32 3
#define DDPRT_DTYPE_F64 4

/* Reductions; the values are those of the dialect's ddp::Reduction. */
#define DDPRT_REDUCTION_SUM 0
#define DDPRT_REDUCTION_AVG 1
#define DDPRT_REDUCTION_MAX 2

/* The optimizer states ddprt_param_optimizer_state reads. */
#define DDPRT_OPTIMIZER_STATE_MAIN 0
#define DDPRT_OPTIMIZER_STATE_ADAM_M 1
#define DDPRT_OPTIMIZER_STATE_ADAM_V 2

/* The routing kernels of ddprt_route; the values are those of the
 * dialect's ddp::RoutingKernel. */
#define DDPRT_ROUTE_SELECT 0
#define DDPRT_ROUTE_SELECT_GRAD 1
#define DDPRT_ROUTE_GATHER 2
#define DDPRT_ROUTE_COMBINE 3
#define DDPRT_ROUTE_SORT_CHUNKS 4
#define DDPRT_ROUTE_UNSORT_CHUNKS 5
#define DDPRT_ROUTE_COUNT 6
/* The most experts ddprt_route lets a token choose. */
#define DDPRT_ROUTE_MAX_TOPK 32

/* Backends for ddprt_init. AUTO picks CUDA when it is built and a device is
 * present, else CPU. */
#define DDPRT_BACKEND_AUTO 0
#define DDPRT_BACKEND_CPU 1
#define DDPRT_BACKEND_CUDA 2

/* Flags for ddprt_init. By default an error prints its message and ends all
 * ranks (MPI_Abort), so that generated code need not check statuses. With
 * DDPRT_FLAG_RETURN_ERRORS, entry points return the status and keep the
 * message for ddprt_last_error. A collective timeout always ends all ranks. */
#define DDPRT_FLAG_RETURN_ERRORS 0x1
/* Reduce in one order whatever the message size: all-reduce becomes an
 * all-gather followed by a sum in pairs of neighbouring group ranks, level
 * by level (0+1, 2+3, ..., then the same on the sums; an odd last one is
 * carried up), reduce-scatter an all-to-all followed by the same. (Pairs
 * rather than a left fold so that a reduction within blocks of 2^j
 * consecutive ranks followed by one across the blocks gives the same bits.) MPI (and NCCL) pick their reduction
 * algorithm, and so the order in which floating-point values are added, by
 * message size, so one gradient reduced alone and the same gradient
 * reduced inside a bucket may differ in the last bit in groups of more
 * than 2 ranks; with this flag they cannot. It moves n times the data of a
 * ring, so it is for verification (ddp-run --verify), not speed. CPU
 * backend only. */
#define DDPRT_FLAG_DETERMINISTIC_REDUCTIONS 0x2
/* Every GEMM by the fixed-order kernel: each element of the result one
 * fused multiply-add chain over k = 0, 1, ..., K-1 (16-bit operands in f32,
 * rounded once), so that a GEMM on a block of rows equals those rows of the
 * whole product and the two backends agree bitwise. Without it the CPU
 * backend calls OpenBLAS (where the runtime was built with it) and the CUDA
 * backend cuBLAS, whose order of summation depends on the shape. For
 * verification (ddp-run --verify, ddp-launch --gemm=fixed-order), not
 * speed. */
#define DDPRT_FLAG_FIXED_ORDER_GEMM 0x4
/* Parameters and inputs seeded with fractions that use every bit of an f32
 * mantissa, in [-1/32, 1/32), instead of the integers -2..2 (Seed.h). For timing
 * on a GPU, which runs GEMMs on small integers faster (less switching, so
 * higher clocks) than on the values of real training; sums are no longer
 * exact, so two schedules that add in different orders may differ in the
 * last bits. */
#define DDPRT_FLAG_FRACTIONAL_DATA 0x8
/* Every GEMM's and every compute stand-in's sums reduced modulo 8 into
 * [-4, 4] before the result is rounded to its type (exactly: x - 8 rint(x/8)
 * in f32, f64 for f64). Without it the seeded integers -2..2 grow about a
 * hundred times a GEMM at width 4096, lose exactness after two GEMMs and
 * overflow to inf after some twenty, and two programs that both end on
 * NaNs compare equal; with it they stay integers below 5 at any depth, so
 * that a GEMM's sums are exact, and differences almost always stay visible.
 * The compute stand-in then also weighs input j by j + 1 and adds r to
 * result r, so that swapped inputs or results show. A stand-in for a
 * network's normalization, for verification (ddp-run --verify, ddp-launch
 * --data=bounded). Needs DDPRT_FLAG_FIXED_ORDER_GEMM (cuBLAS rounds a
 * 16-bit result itself). */
#define DDPRT_FLAG_BOUNDED_VALUES 0x10

/*===----------------------------------------------------------------------===*
 * Types crossing the boundary
 *===----------------------------------------------------------------------===*/

/* The runtime's state: one per process, created by ddprt_init. */
typedef struct ddprt_context ddprt_context;

/* An outstanding asynchronous operation. Zero is never a valid handle. */
typedef uint64_t ddprt_handle;

/* One tensor of a variadic operand list (ddprt_compute). */
typedef struct ddprt_tensor {
  void *data;
  int64_t numel;
  int32_t dtype;
  int32_t reserved; /* must be 0 */
} ddprt_tensor;

DDPRT_STATIC_ASSERT(sizeof(ddprt_tensor) == sizeof(void *) + 16,
                    "ddprt_tensor layout is part of the ABI");
DDPRT_STATIC_ASSERT(offsetof(ddprt_tensor, numel) == sizeof(void *) ||
                        sizeof(void *) < 8,
                    "ddprt_tensor layout is part of the ABI");
DDPRT_STATIC_ASSERT(sizeof(ddprt_handle) == 8, "handles are 64-bit");
DDPRT_STATIC_ASSERT(sizeof(ddprt_status) == 4, "statuses are 32-bit");

/*===----------------------------------------------------------------------===*
 * Entry points (documented in RuntimeFunctions.def)
 *===----------------------------------------------------------------------===*/

/* Also defines DDPRT_ABI_VERSION, the version of this header and of the
 * entry points, which is written beside them. */
#define DDPRT_ENTRY_POINT(Enumerator, Result, Function, Parameters)            \
  DDPRT_EXPORT Result Function Parameters;
#include "ddp/Runtime/RuntimeFunctions.def"

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DDP_RUNTIME_DDPRT_H */
