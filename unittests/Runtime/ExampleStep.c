/*===- ExampleStep.c - A lowered step written by hand, in C ----------------===*
 *
 * What the lowering generates for a two-layer step with one gradient bucket
 * (docs/Runtime.md, "Example"): the weight gradients are computed straight
 * into their views of the bucket (no copy packs it), whose average over dp
 * is issued asynchronously and waited for before SGD. Every rank must end
 * with the same parameters; the exit status says whether they did. Run
 * under mpirun -np 2.
 *
 *===----------------------------------------------------------------------===*/

#include "ddp/Runtime/ddprt.h"

#include <stdio.h>
#include <string.h>

#define CHECK(call)                                                            \
  do {                                                                         \
    if ((call) != DDPRT_OK)                                                    \
      return 1; /* unreachable: errors end the job by default */               \
  } while (0)

int main(void) {
  ddprt_context *ctx = NULL;
  CHECK(ddprt_init(DDPRT_ABI_VERSION, "dp=2", DDPRT_BACKEND_CPU, 0, 0, NULL,
                   &ctx));
  int32_t dp = 0, w1 = 0, w2 = 0;
  CHECK(ddprt_group_create(ctx, "dp", &dp));
  /* ddp.param @w1 : tensor<16x8xf32>, @w2 : tensor<8x4xf32> */
  CHECK(ddprt_param_register(ctx, "w1", DDPRT_DTYPE_F32, 16 * 8, 7, &w1));
  CHECK(ddprt_param_register(ctx, "w2", DDPRT_DTYPE_F32, 8 * 4, 7, &w2));
  void *w1Data = NULL, *w2Data = NULL;
  float before[128];
  CHECK(ddprt_param_read(ctx, w1, before, sizeof(before)));
  CHECK(ddprt_param_data(ctx, w1, &w1Data));
  CHECK(ddprt_param_data(ctx, w2, &w2Data));

  /* Step inputs %x : tensor<32x16xf32>, %dy : tensor<32x4xf32>. */
  void *x = NULL, *dy = NULL, *h = NULL, *dh = NULL, *bucket = NULL;
  CHECK(ddprt_alloc(ctx, DDPRT_DTYPE_F32, 32 * 16, &x));
  CHECK(ddprt_alloc(ctx, DDPRT_DTYPE_F32, 32 * 4, &dy));
  CHECK(ddprt_fill_input(ctx, x, DDPRT_DTYPE_F32, 32 * 16, 0));
  CHECK(ddprt_fill_input(ctx, dy, DDPRT_DTYPE_F32, 32 * 4, 1));
  CHECK(ddprt_alloc(ctx, DDPRT_DTYPE_F32, 32 * 8, &h));
  CHECK(ddprt_alloc(ctx, DDPRT_DTYPE_F32, 32 * 8, &dh));
  /* ddp.bucket_pack %g2, %g1 offsets [0, 32] -> tensor<160xf32>: the
   * gradients' views, no copy. */
  CHECK(ddprt_alloc(ctx, DDPRT_DTYPE_F32, 160, &bucket));
  float *g2 = (float *)bucket;
  float *g1 = (float *)bucket + 32;

  /* %h = ddp.gemm fwd %x, %w1 */
  CHECK(ddprt_gemm(ctx, DDPRT_DTYPE_F32, 0, 0, 32, 8, 16, x, w1Data, h,
                   "fc1 fwd"));
  /* %dw2 = ddp.gemm wgrad %h transposed, %dy (into the bucket) */
  CHECK(
      ddprt_gemm(ctx, DDPRT_DTYPE_F32, 1, 0, 8, 4, 32, h, dy, g2, "fc2 wgrad"));
  /* %dh = ddp.gemm dgrad %dy, %w2 transposed */
  CHECK(ddprt_gemm(ctx, DDPRT_DTYPE_F32, 0, 1, 32, 8, 4, dy, w2Data, dh,
                   "fc2 dgrad"));
  /* %dw1 = ddp.gemm wgrad %x transposed, %dh (into the bucket) */
  CHECK(ddprt_gemm(ctx, DDPRT_DTYPE_F32, 1, 0, 16, 8, 32, x, dh, g1,
                   "fc1 wgrad"));
  CHECK(ddprt_check_finite(ctx, DDPRT_DTYPE_F32, 160, bucket, "bucket0",
                           "w2,w1"));
  /* %r, %t = ddp.all_reduce avg %b over @world[dp] async; ddp.wait %t */
  ddprt_handle token = 0;
  CHECK(ddprt_all_reduce(ctx, dp, DDPRT_REDUCTION_AVG, DDPRT_DTYPE_F32, 160,
                         bucket, bucket, &token));
  CHECK(ddprt_wait(ctx, token));
  /* ddp.bucket_unpack: the same views; ddp.sgd on each. */
  CHECK(ddprt_sgd(ctx, w1, DDPRT_DTYPE_F32, g1, 0.5));
  CHECK(ddprt_sgd(ctx, w2, DDPRT_DTYPE_F32, g2, 0.5));

  /* Every rank holds the same parameters: compare with rank 0's. */
  void *gathered = NULL;
  int32_t rank = 0, size = 0;
  CHECK(ddprt_get_rank(ctx, &rank, &size));
  CHECK(ddprt_alloc(ctx, DDPRT_DTYPE_F32, 128 * size, &gathered));
  CHECK(
      ddprt_all_gather(ctx, dp, DDPRT_DTYPE_F32, 128, w1Data, gathered, NULL));
  float all[128 * 2];
  CHECK(ddprt_read(ctx, all, gathered, (int64_t)sizeof(float) * 128 * 2));
  int same = memcmp(all, all + 128, sizeof(float) * 128) == 0;
  float after[128];
  CHECK(ddprt_param_read(ctx, w1, after, sizeof(after)));
  int updated = memcmp(before, after, sizeof(after)) != 0;
  CHECK(ddprt_finalize(ctx));
  if (!same || !updated) {
    fprintf(stderr, "rank %d: %s\n", rank,
            !same ? "parameters differ between ranks"
                  : "SGD did not change the parameters");
    return 1;
  }
  printf("rank %d: parameters updated, equal on every rank\n", rank);
  return 0;
}
