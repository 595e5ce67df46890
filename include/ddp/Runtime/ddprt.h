/*===- ddprt.h - The C ABI of the ddp runtime (libddprt) ----------*- C -*-===*
 *
 * The only header shared by the compiler (the ddp-to-LLVM lowering) and the
 * runtime. Plain C (C11, for _Static_assert) with no dependency: the
 * lowering reads the symbol names and constants below, the runtime
 * implements the functions.
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

/* Bumped on every change to a signature, a constant or a struct below; the
 * compiler passes the version it was built with to ddprt_init. */
#define DDPRT_ABI_VERSION 5

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
 * Symbol names, for the lowering
 *===----------------------------------------------------------------------===*/

#define DDPRT_SYM_INIT "ddprt_init"
#define DDPRT_SYM_FINALIZE "ddprt_finalize"
#define DDPRT_SYM_LAST_ERROR "ddprt_last_error"
#define DDPRT_SYM_GET_RANK "ddprt_get_rank"
#define DDPRT_SYM_GET_BACKEND "ddprt_get_backend"
#define DDPRT_SYM_GROUP_CREATE "ddprt_group_create"
#define DDPRT_SYM_GROUP_INFO "ddprt_group_info"
#define DDPRT_SYM_ALLOC "ddprt_alloc"
#define DDPRT_SYM_FREE "ddprt_free"
#define DDPRT_SYM_COPY "ddprt_copy"
#define DDPRT_SYM_READ "ddprt_read"
#define DDPRT_SYM_WRITE "ddprt_write"
#define DDPRT_SYM_FILL_INPUT "ddprt_fill_input"
#define DDPRT_SYM_PARAM_REGISTER "ddprt_param_register"
#define DDPRT_SYM_PARAM_REGISTER_IN "ddprt_param_register_in"
#define DDPRT_SYM_PARAM_LOOKUP "ddprt_param_lookup"
#define DDPRT_SYM_PARAM_COUNT "ddprt_param_count"
#define DDPRT_SYM_PARAM_INFO "ddprt_param_info"
#define DDPRT_SYM_PARAM_DATA "ddprt_param_data"
#define DDPRT_SYM_PARAM_READ "ddprt_param_read"
#define DDPRT_SYM_GEMM "ddprt_gemm"
#define DDPRT_SYM_COMPUTE "ddprt_compute"
#define DDPRT_SYM_ACCUMULATE "ddprt_accumulate"
#define DDPRT_SYM_SCALE "ddprt_scale"
#define DDPRT_SYM_CAST "ddprt_cast"
#define DDPRT_SYM_CHECK_FINITE "ddprt_check_finite"
#define DDPRT_SYM_ALL_REDUCE "ddprt_all_reduce"
#define DDPRT_SYM_REDUCE_SCATTER "ddprt_reduce_scatter"
#define DDPRT_SYM_ALL_GATHER "ddprt_all_gather"
#define DDPRT_SYM_SEND "ddprt_send"
#define DDPRT_SYM_RECV "ddprt_recv"
#define DDPRT_SYM_WAIT "ddprt_wait"
#define DDPRT_SYM_JOIN "ddprt_join"
#define DDPRT_SYM_COMM_WAIT "ddprt_comm_wait"
#define DDPRT_SYM_SGD "ddprt_sgd"
#define DDPRT_SYM_ADAM "ddprt_adam"
#define DDPRT_SYM_SYNCHRONIZE "ddprt_synchronize"
#define DDPRT_SYM_SHARD_SGD "ddprt_shard_sgd"
#define DDPRT_SYM_SHARD_ADAM "ddprt_shard_adam"
#define DDPRT_SYM_GET_PARAM_SHARD "ddprt_get_param_shard"
#define DDPRT_SYM_SET_PARAM_SHARD "ddprt_set_param_shard"

/*===----------------------------------------------------------------------===*
 * Lifetime
 *===----------------------------------------------------------------------===*/

/* Starts the runtime on this rank (initialising MPI if the program has not).
 *  abi_version: DDPRT_ABI_VERSION as the caller was compiled with; any other
 *               value is rejected with DDPRT_ERROR_ABI_MISMATCH.
 *  mesh:        the device mesh, "dp=2,tp=2": axis names and sizes, the first
 *               axis varying slowest; the product must be the MPI world size.
 *  backend:     DDPRT_BACKEND_*.
 *  flags:       DDPRT_FLAG_*.
 *  timeout_ms:  how long a collective may take before all ranks are ended;
 *               0 takes DDPRT_TIMEOUT (seconds) from the environment, else
 *               60 s.
 *  trace_path:  where rank 0 writes the merged Chrome trace at
 *               ddprt_finalize; NULL takes DDPRT_TRACE from the environment,
 *               and none there means no tracing.
 * On failure *context is NULL and ddprt_last_error(NULL) gives the message. */
DDPRT_EXPORT ddprt_status ddprt_init(int32_t abi_version, const char *mesh,
                                     int32_t backend, int32_t flags,
                                     int32_t timeout_ms, const char *trace_path,
                                     ddprt_context **context);

/* Waits for all outstanding work, writes the trace, frees every buffer and
 * parameter, and destroys the context. A handle never consumed is an error
 * (reported after the work is drained). Collective: every rank must call
 * it. If ddprt_init initialised MPI, MPI is finalized at process exit, so a
 * program may create one context after another. */
DDPRT_EXPORT ddprt_status ddprt_finalize(ddprt_context *context);

/* The message of the last error on this context, or "" if none. With a NULL
 * context: the last ddprt_init failure of the calling thread. The string
 * stays valid until the next call on the context. */
DDPRT_EXPORT const char *ddprt_last_error(ddprt_context *context);

/* World rank and size. */
DDPRT_EXPORT ddprt_status ddprt_get_rank(ddprt_context *context, int32_t *rank,
                                         int32_t *size);

/* The backend chosen (DDPRT_BACKEND_CPU or DDPRT_BACKEND_CUDA). */
DDPRT_EXPORT ddprt_status ddprt_get_backend(ddprt_context *context,
                                            int32_t *backend);

/* Blocks the caller until all work issued so far on the compute stream has
 * finished (a no-op on the CPU backend, where compute is synchronous). */
DDPRT_EXPORT ddprt_status ddprt_synchronize(ddprt_context *context);

/*===----------------------------------------------------------------------===*
 * Process groups
 *===----------------------------------------------------------------------===*/

/* The process group spanned by mesh axes `axes` ("dp" or "dp,tp"): the ranks
 * that share this rank's coordinates on every other axis. Ranks are numbered
 * row-major over the listed axes in the listed order (so with axes in mesh
 * order, group order is world order). Its communicator is created once: a
 * second call with the same axes returns the same group. Collective over the
 * whole world: every rank must create the same groups in the same order. */
DDPRT_EXPORT ddprt_status ddprt_group_create(ddprt_context *context,
                                             const char *axes, int32_t *group);

/* This rank's index in `group` and the group's size. */
DDPRT_EXPORT ddprt_status ddprt_group_info(ddprt_context *context,
                                           int32_t group, int32_t *rank,
                                           int32_t *size);

/*===----------------------------------------------------------------------===*
 * Buffers
 *===----------------------------------------------------------------------===*/

/* A zero-filled buffer of `numel` elements in the backend's memory. */
DDPRT_EXPORT ddprt_status ddprt_alloc(ddprt_context *context, int32_t dtype,
                                      int64_t numel, void **data);

/* Frees a buffer from ddprt_alloc (after the compute stream is done with
 * it). NULL is allowed. */
DDPRT_EXPORT ddprt_status ddprt_free(ddprt_context *context, void *data);

/* Copies `bytes` between buffers, on the compute stream. */
DDPRT_EXPORT ddprt_status ddprt_copy(ddprt_context *context, void *dst,
                                     const void *src, int64_t bytes);

/* Copies `bytes` from a buffer to host memory / from host memory to a
 * buffer, after all issued compute work; the host side is done on return. */
DDPRT_EXPORT ddprt_status ddprt_read(ddprt_context *context, void *host_dst,
                                     const void *src, int64_t bytes);
DDPRT_EXPORT ddprt_status ddprt_write(ddprt_context *context, void *dst,
                                      const void *host_src, int64_t bytes);

/* Fills a step input with small integers in [-2, 2] from `seed` and this
 * rank's world rank (so ranks get different data, reproducibly). */
DDPRT_EXPORT ddprt_status ddprt_fill_input(ddprt_context *context, void *data,
                                           int32_t dtype, int64_t numel,
                                           uint64_t seed);

/*===----------------------------------------------------------------------===*
 * Parameters
 *===----------------------------------------------------------------------===*/

/* Registers a parameter and allocates its storage, initialised with small
 * integers in [-2, 2] from `seed` and `name`, identical on every rank.
 * Parameters are numbered 0, 1, ... in registration order. */
DDPRT_EXPORT ddprt_status ddprt_param_register(ddprt_context *context,
                                               const char *name, int32_t dtype,
                                               int64_t numel, uint64_t seed,
                                               int32_t *param);

/* The same, with the parameter stored at `storage`: numel elements inside
 * one buffer from ddprt_alloc (a slice of the bucket its all-gather fills),
 * which ddprt_free releases with it; after that the parameter can only be
 * looked up. NULL storage allocates, as ddprt_param_register does. */
DDPRT_EXPORT ddprt_status ddprt_param_register_in(
    ddprt_context *context, const char *name, int32_t dtype, int64_t numel,
    uint64_t seed, void *storage, int32_t *param);

/* The number of a parameter registered under `name`. */
DDPRT_EXPORT ddprt_status ddprt_param_lookup(ddprt_context *context,
                                             const char *name, int32_t *param);

DDPRT_EXPORT ddprt_status ddprt_param_count(ddprt_context *context,
                                            int32_t *count);

/* Name (valid while the context lives), dtype and size of a parameter. Any
 * output pointer may be NULL. */
DDPRT_EXPORT ddprt_status ddprt_param_info(ddprt_context *context,
                                           int32_t param, const char **name,
                                           int32_t *dtype, int64_t *numel);

/* The parameter's storage, for ddp.get_param. */
DDPRT_EXPORT ddprt_status ddprt_param_data(ddprt_context *context,
                                           int32_t param, void **data);

/* Copies the parameter's current value to host memory; `bytes` must be its
 * size in bytes. */
DDPRT_EXPORT ddprt_status ddprt_param_read(ddprt_context *context,
                                           int32_t param, void *host_dst,
                                           int64_t bytes);

/*===----------------------------------------------------------------------===*
 * Compute (on the compute stream)
 *===----------------------------------------------------------------------===*/

/* result[m x n] = op(lhs) * op(rhs), row-major, all of `dtype`. lhs is
 * m x k (k x m when transpose_lhs), rhs is k x n (n x k when transpose_rhs).
 * f16 and bf16 are multiplied with fp32 accumulation and rounded once.
 * `label` names the op in the trace (NULL: "gemm"). */
DDPRT_EXPORT ddprt_status ddprt_gemm(ddprt_context *context, int32_t dtype,
                                     int32_t transpose_lhs,
                                     int32_t transpose_rhs, int64_t m,
                                     int64_t n, int64_t k, const void *lhs,
                                     const void *rhs, void *result,
                                     const char *label);

/* The stand-in for a kernel the compiler does not model (ddp.compute): every
 * result element i is the sum over inputs j of input_j[i mod numel_j], each
 * converted to the result's accumulation type (f64 for f64, else f32),
 * summed in input order and rounded once; zero inputs give zeros. `kind`
 * names it in the trace. */
DDPRT_EXPORT ddprt_status ddprt_compute(
    ddprt_context *context, const char *kind, const ddprt_tensor *inputs,
    int32_t num_inputs, const ddprt_tensor *results, int32_t num_results);

/* result = lhs + rhs, elementwise, computed in f32 (f64 for f64). */
DDPRT_EXPORT ddprt_status ddprt_accumulate(ddprt_context *context,
                                           int32_t dtype, int64_t numel,
                                           const void *lhs, const void *rhs,
                                           void *result);

/* result = input * factor: in f64 for f64, else in f32 with the factor
 * rounded to f32; rounded once. */
DDPRT_EXPORT ddprt_status ddprt_scale(ddprt_context *context, int32_t dtype,
                                      int64_t numel, const void *input,
                                      double factor, void *result);

/* Converts `numel` elements, rounding to nearest even. */
DDPRT_EXPORT ddprt_status ddprt_cast(ddprt_context *context, int32_t src_dtype,
                                     const void *input, int32_t dst_dtype,
                                     void *result, int64_t numel);

/* DDPRT_ERROR_NONFINITE, with a message naming `buffer_name`, the first bad
 * element and `param_names` (may be NULL), if any element is NaN or Inf. */
DDPRT_EXPORT ddprt_status ddprt_check_finite(ddprt_context *context,
                                             int32_t dtype, int64_t numel,
                                             const void *data,
                                             const char *buffer_name,
                                             const char *param_names);

/*===----------------------------------------------------------------------===*
 * Collectives (on a communication stream; synchronous when handle is NULL)
 *
 * f16 and bf16 are reduced in f32: converted, reduced, rounded once. AVG is
 * a pre-multiplied sum, as NCCL's ncclAvg for floating-point types: each
 * rank's contribution is first scaled by 1/(group size) exactly as
 * ddprt_scale does (in the element type, the factor 1/n a double), then the
 * scaled contributions are summed; so AVG equals ddprt_scale(1/n) followed
 * by a SUM bitwise, for every group size and dtype. result may be input (in
 * place); views of one buffer may overlap otherwise too.
 *===----------------------------------------------------------------------===*/

/* result[numel] = reduction over the group of input[numel]. */
DDPRT_EXPORT ddprt_status ddprt_all_reduce(ddprt_context *context,
                                           int32_t group, int32_t reduction,
                                           int32_t dtype, int64_t numel,
                                           const void *input, void *result,
                                           ddprt_handle *handle);

/* result[numel] = slice `group rank` of the reduction of
 * input[numel * group size]. */
DDPRT_EXPORT ddprt_status ddprt_reduce_scatter(ddprt_context *context,
                                               int32_t group, int32_t reduction,
                                               int32_t dtype, int64_t numel,
                                               const void *input, void *result,
                                               ddprt_handle *handle);

/* result[numel * group size] = the inputs[numel] of the group concatenated
 * in group rank order (dimension 0 of the tensor). */
DDPRT_EXPORT ddprt_status ddprt_all_gather(ddprt_context *context,
                                           int32_t group, int32_t dtype,
                                           int64_t numel, const void *input,
                                           void *result, ddprt_handle *handle);

/* Group rank i sends input[numel] to group rank (i + offset) mod n. */
DDPRT_EXPORT ddprt_status ddprt_send(ddprt_context *context, int32_t group,
                                     int64_t offset, int32_t dtype,
                                     int64_t numel, const void *input,
                                     ddprt_handle *handle);

/* Group rank i receives result[numel] from group rank (i + offset) mod n. */
DDPRT_EXPORT ddprt_status ddprt_recv(ddprt_context *context, int32_t group,
                                     int64_t offset, int32_t dtype,
                                     int64_t numel, void *result,
                                     ddprt_handle *handle);

/* Makes the compute stream wait for `handle` and consumes it. */
DDPRT_EXPORT ddprt_status ddprt_wait(ddprt_context *context,
                                     ddprt_handle handle);

/* Consumes `count` handles and writes one that completes when all have. */
DDPRT_EXPORT ddprt_status ddprt_join(ddprt_context *context,
                                     const ddprt_handle *handles, int32_t count,
                                     ddprt_handle *joined);

/* Orders the communication issued after this call after the op of `handle`,
 * without holding the compute stream (as cudaStreamWaitEvent orders a
 * stream): an asynchronous collective issued next may read what that op
 * writes. The handle stays outstanding (it is not consumed). The lowering of
 * `async after %t` calls it for each token, issues the op, and joins the
 * tokens into the op's handle. */
DDPRT_EXPORT ddprt_status ddprt_comm_wait(ddprt_context *context,
                                          ddprt_handle handle);

/*===----------------------------------------------------------------------===*
 * Optimizer (on the compute stream)
 *===----------------------------------------------------------------------===*/

/* param -= lr * grad, in f64 for f64 parameters, else in f32 with lr rounded
 * to f32; rounded once to the parameter's type. grad has the parameter's
 * numel and any dtype. An f16 or bf16 parameter is updated through an fp32
 * main copy kept by the runtime (made from the parameter at its first
 * update): the main copy is updated, and the parameter becomes the main copy
 * rounded; likewise for ddprt_adam. */
DDPRT_EXPORT ddprt_status ddprt_sgd(ddprt_context *context, int32_t param,
                                    int32_t grad_dtype, const void *grad,
                                    double lr);

/* Adam with bias correction; fp32 moments kept per parameter by the runtime.
 * At step t (counted per parameter from 1):
 *   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
 *   step_size = lr / (1 - beta1^t);   c2 = sqrt(1 - beta2^t)   (host, f64)
 *   update = step_size * (m / (sqrt(v) / c2 + eps))            (f32)
 *   param = param - update   (f64 for f64 parameters, else f32; rounded)
 */
DDPRT_EXPORT ddprt_status ddprt_adam(ddprt_context *context, int32_t param,
                                     int32_t grad_dtype, const void *grad,
                                     double lr, double beta1, double beta2,
                                     double eps);

/*===----------------------------------------------------------------------===*
 * Distributed optimizer (on the compute stream)
 *
 * A bucket of shard_numel x (group size) elements holds `param` at elements
 * [offset, offset + numel); group rank r owns elements
 * [r * shard_numel, (r + 1) * shard_numel), and grad_shard (shard_numel
 * elements of grad_dtype) is its shard of the reduced gradients. For every
 * element of the parameter inside this rank's shard, param_shard (shard_numel
 * elements of the parameter's dtype) receives, at the element's position in
 * the shard, the value ddprt_sgd / ddprt_adam would give it; the parameter
 * itself is not changed and the other elements of param_shard are not
 * written. A parameter outside the shard is a no-op. Adam keeps fp32 moments
 * for the parameter's elements in the shard only, and counts its steps per
 * parameter; one parameter must always be called with the same shard.
 *===----------------------------------------------------------------------===*/

DDPRT_EXPORT ddprt_status ddprt_shard_sgd(ddprt_context *context,
                                          int32_t group, int32_t param,
                                          int64_t offset, int32_t grad_dtype,
                                          const void *grad_shard,
                                          int64_t shard_numel,
                                          void *param_shard, double lr);

DDPRT_EXPORT ddprt_status
ddprt_shard_adam(ddprt_context *context, int32_t group, int32_t param,
                 int64_t offset, int32_t grad_dtype, const void *grad_shard,
                 int64_t shard_numel, void *param_shard, double lr,
                 double beta1, double beta2, double eps);

/* The parameter values of this rank's shard, with the layout above:
 * ddprt_get_param_shard copies every element of `param` that lies in the
 * rank's shard into param_shard (shard_numel elements of the parameter's
 * dtype) at its position there; ddprt_set_param_shard copies them back into
 * the parameter and leaves its other elements alone. With
 * overlap-param-gather a step ends with ddprt_set_param_shard and the next
 * one gathers the shards; ddprt_finish_param_sync completes that gather for
 * a caller that reads the parameters in between. */
DDPRT_EXPORT ddprt_status ddprt_get_param_shard(ddprt_context *context,
                                                int32_t group, int32_t param,
                                                int64_t offset,
                                                int64_t shard_numel,
                                                void *param_shard);

DDPRT_EXPORT ddprt_status ddprt_set_param_shard(ddprt_context *context,
                                                int32_t group, int32_t param,
                                                int64_t offset,
                                                int64_t shard_numel,
                                                const void *param_shard);

/* Gives every parameter written by ddprt_set_param_shard since the last
 * call its elements from the other ranks of its group (an all-gather per
 * parameter, in registration order, so every rank must call it), as
 * Megatron's finish_param_sync before a checkpoint. Synchronous. */
DDPRT_EXPORT ddprt_status ddprt_finish_param_sync(ddprt_context *context);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DDP_RUNTIME_DDPRT_H */
