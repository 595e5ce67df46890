//===- RoutingTest.cpp - ddprt_route's kernels against hand-computed cases ===//
//
// The router of 4 tokens over 3 experts, top 2, capacity 2 (ties, a NaN
// logit, an expert over its capacity), and the row kernels on small blocks.
// Expected values are worked out in the comments from the definitions in
// RuntimeFunctions.def.
//
//===----------------------------------------------------------------------===//

#include "Routing.h"
#include "RuntimeTestSupport.h"

#include <cmath>
#include <limits>

using namespace ddprt::test;

namespace {

class RoutingTest : public RuntimeSuite {
protected:
  struct Buffer {
    int32_t dtype;
    int64_t numel;
    void *data;
    ddprt_tensor tensor() const { return {data, numel, dtype, 0}; }
  };
  Buffer make(int32_t dtype, const std::vector<double> &values) {
    Buffer buffer{dtype, int64_t(values.size()), upload(dtype, values)};
    buffers.push_back(buffer.data);
    return buffer;
  }
  Buffer zeros(int32_t dtype, int64_t numel) {
    return make(dtype, std::vector<double>(size_t(numel), 0.0));
  }
  std::vector<double> read(const Buffer &buffer) {
    return download(buffer.dtype, buffer.data, buffer.numel);
  }
  ddprt_status route(int32_t kernel, std::vector<int64_t> params,
                     std::vector<Buffer> inputs, std::vector<Buffer> results) {
    std::vector<ddprt_tensor> in, out;
    for (const Buffer &buffer : inputs)
      in.push_back(buffer.tensor());
    for (const Buffer &buffer : results)
      out.push_back(buffer.tensor());
    return ddprt_route(context, kernel, "test", params.data(),
                       int32_t(params.size()), in.data(), int32_t(in.size()),
                       out.data(), int32_t(out.size()));
  }
  /// The last error, past its "ddprt: rank N: " prefix, is `message`.
  static void expectMessage(const std::string &message) {
    std::string error = ddprt_last_error(context);
    size_t start = error.find("ddprt_route");
    EXPECT_EQ(start == std::string::npos ? error : error.substr(start),
              message);
  }
  void TearDown() override {
    for (void *data : buffers)
      EXPECT_EQ(ddprt_free(context, data), DDPRT_OK);
  }
  std::vector<void *> buffers;
};

const double nan = std::numeric_limits<double>::quiet_NaN();
// softmax(3, 2) = (1, e^-1) / (1 + e^-1), and softmax(0, 4).
const double high = 1 / (1 + std::exp(-1.0)), low = 1 - high;
const double tiny = std::exp(-4.0) / (1 + std::exp(-4.0)), big = 1 - tiny;

TEST_F(RoutingTest, SelectIsTopKThenSoftmaxThenCapacity) {
  // t0 picks e1, e2; t1 ties e0 = e1 (both taken); t2's NaN ranks last, so
  // e1, e2; t3 picks e1, e0. Expert 1 is chosen by all four: it keeps its 2
  // most probable, t3 (0.98) and t0 (0.73, tied with t2: the lower token),
  // in token order; t1's and t2's routes to it are dropped.
  Buffer logits = make(DDPRT_DTYPE_BF16, {1, 3, 2,   //
                                          5, 5, 0,   //
                                          nan, 1, 0, //
                                          0, 4, -1});
  Buffer probs = zeros(DDPRT_DTYPE_F32, 6), rows = zeros(DDPRT_DTYPE_F32, 6),
         slots = zeros(DDPRT_DTYPE_F32, 8);
  ASSERT_EQ(route(DDPRT_ROUTE_SELECT, {2, 2}, {logits}, {probs, rows, slots}),
            DDPRT_OK)
      << ddprt_last_error(context);
  EXPECT_EQ(read(rows), (std::vector<double>{1, 3, 0, 3, 0, 2}));
  EXPECT_EQ(read(slots), (std::vector<double>{2, 4, 0, -1, -1, 5, 1, 3}));
  std::vector<double> expected{0.5, tiny, high, big, low, low};
  std::vector<double> got = read(probs);
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(float(got[i]), float(expected[i])) << "slot " << i;
}

TEST_F(RoutingTest, EmptySlotsAreMinusOneWithZeroProbability) {
  // One token, top 1 of 2, capacity 3: e0 takes it, the rest is empty.
  Buffer logits = make(DDPRT_DTYPE_F32, {2, 1});
  Buffer probs = zeros(DDPRT_DTYPE_F32, 6), rows = zeros(DDPRT_DTYPE_F32, 6),
         slots = zeros(DDPRT_DTYPE_F32, 1);
  ASSERT_EQ(route(DDPRT_ROUTE_SELECT, {1, 3}, {logits}, {probs, rows, slots}),
            DDPRT_OK);
  EXPECT_EQ(read(rows), (std::vector<double>{0, -1, -1, -1, -1, -1}));
  EXPECT_EQ(read(probs), (std::vector<double>{1, 0, 0, 0, 0, 0}));
  EXPECT_EQ(read(slots), (std::vector<double>{0}));
}

TEST_F(RoutingTest, SelectGradIsTheSoftmaxBackwardOfKeptRoutes) {
  // Token [5, 5, 0] routes to e0 and e1 at 0.5 each; only e0's slot (0)
  // was kept, with gradient 1: the routes' gradients are (1, 0), their
  // probability-weighted mean 0.5, so e0 gets 0.5 x (1 - 0.5) and e1
  // 0.5 x (0 - 0.5); e2, not chosen, 0.
  Buffer grads = make(DDPRT_DTYPE_F32, {1, 7});
  Buffer logits = make(DDPRT_DTYPE_F64, {5, 5, 0});
  Buffer slots = make(DDPRT_DTYPE_F32, {0, -1});
  Buffer result = zeros(DDPRT_DTYPE_F64, 3);
  ASSERT_EQ(route(DDPRT_ROUTE_SELECT_GRAD, {2}, {grads, logits, slots},
                  {result}),
            DDPRT_OK)
      << ddprt_last_error(context);
  EXPECT_EQ(read(result), (std::vector<double>{0.25, -0.25, 0}));
}

TEST_F(RoutingTest, GatherCopiesRowsAndZeroFillsNone) {
  Buffer rows = make(DDPRT_DTYPE_BF16, {1, 2, 3, 4, 5, 6});
  Buffer map = make(DDPRT_DTYPE_F32, {2, -1, 0});
  Buffer result = make(DDPRT_DTYPE_BF16, {9, 9, 9, 9, 9, 9});
  ASSERT_EQ(route(DDPRT_ROUTE_GATHER, {}, {rows, map}, {result}), DDPRT_OK)
      << ddprt_last_error(context);
  EXPECT_EQ(read(result), (std::vector<double>{5, 6, 0, 0, 1, 2}));
}

TEST_F(RoutingTest, CombineSumsEachTokensSlotsInOrder) {
  // Token 0's slots are 2 then 0; token 1 kept none.
  Buffer rows = make(DDPRT_DTYPE_F32, {1, 2, 10, 20, 100, 200});
  Buffer slots = make(DDPRT_DTYPE_F32, {2, 0, -1, -1});
  Buffer result = make(DDPRT_DTYPE_F32, {9, 9, 9, 9});
  ASSERT_EQ(route(DDPRT_ROUTE_COMBINE, {2}, {rows, slots}, {result}),
            DDPRT_OK)
      << ddprt_last_error(context);
  EXPECT_EQ(read(result), (std::vector<double>{101, 202, 0, 0}));
}

TEST_F(RoutingTest, CountIsEachExpertsSlotsThatHoldARow) {
  // The first select above: e0 holds t1 and t3, e1 t0 and t3, e2 t0 only;
  // and an expert with none.
  Buffer rows = make(DDPRT_DTYPE_F32, {1, 3, 0, 3, 0, -1, -1, -1});
  Buffer counts = make(DDPRT_DTYPE_F32, {9, 9, 9, 9});
  ASSERT_EQ(route(DDPRT_ROUTE_COUNT, {2}, {rows}, {counts}), DDPRT_OK)
      << ddprt_last_error(context);
  EXPECT_EQ(read(counts), (std::vector<double>{2, 2, 1, 0}));
  Buffer three = zeros(DDPRT_DTYPE_F32, 3);
  EXPECT_EQ(route(DDPRT_ROUTE_COUNT, {2}, {rows}, {three}),
            DDPRT_ERROR_INVALID_ARGUMENT);
  expectMessage("ddprt_route(count): counts has 3 elements, expected 4");
}

TEST_F(RoutingTest, SortChunksGroupsByExpertAndUnsortInverts) {
  // 2 ranks x 2 local experts x capacity 1, rows of width 2, and a second
  // tensor (the probabilities) of width 1.
  Buffer tokens = make(DDPRT_DTYPE_F32, {0, 1, 10, 11, 100, 101, 110, 111});
  Buffer probs = make(DDPRT_DTYPE_F16, {1, 2, 3, 4});
  Buffer e0 = zeros(DDPRT_DTYPE_F32, 4), e1 = zeros(DDPRT_DTYPE_F32, 4);
  Buffer p0 = zeros(DDPRT_DTYPE_F16, 2), p1 = zeros(DDPRT_DTYPE_F16, 2);
  ASSERT_EQ(route(DDPRT_ROUTE_SORT_CHUNKS, {2, 1}, {tokens, probs},
                  {e0, e1, p0, p1}),
            DDPRT_OK)
      << ddprt_last_error(context);
  EXPECT_EQ(read(e0), (std::vector<double>{0, 1, 100, 101}));
  EXPECT_EQ(read(e1), (std::vector<double>{10, 11, 110, 111}));
  EXPECT_EQ(read(p0), (std::vector<double>{1, 3}));
  EXPECT_EQ(read(p1), (std::vector<double>{2, 4}));
  Buffer back = zeros(DDPRT_DTYPE_F32, 8);
  ASSERT_EQ(route(DDPRT_ROUTE_UNSORT_CHUNKS, {2, 1}, {e0, e1}, {back}),
            DDPRT_OK)
      << ddprt_last_error(context);
  EXPECT_EQ(read(back), read(tokens));
}

TEST_F(RoutingTest, BadArgumentsAreErrorsThatSayWhat) {
  Buffer rows = make(DDPRT_DTYPE_F32, {1, 2, 3, 4});
  Buffer result = zeros(DDPRT_DTYPE_F32, 4);
  Buffer outOfRange = make(DDPRT_DTYPE_F32, {0, 2});
  EXPECT_EQ(route(DDPRT_ROUTE_GATHER, {}, {rows, outOfRange}, {result}),
            DDPRT_ERROR_INVALID_ARGUMENT);
  expectMessage((
               "ddprt_route(gather) of 'test': map entry 1 is 2, not -1 nor "
               "a row below 2"));
  Buffer wide = make(DDPRT_DTYPE_F64, {0, 1});
  EXPECT_EQ(route(DDPRT_ROUTE_GATHER, {}, {rows, wide}, {result}),
            DDPRT_ERROR_INVALID_ARGUMENT);
  expectMessage((
               "ddprt_route(gather): map is a map and must be f32, got f64"));
  Buffer logits = make(DDPRT_DTYPE_F32, {1, 2, 3, 4});
  Buffer probs = zeros(DDPRT_DTYPE_F32, 2), slotRows = zeros(DDPRT_DTYPE_F32, 2),
         slots = zeros(DDPRT_DTYPE_F32, 6);
  EXPECT_EQ(route(DDPRT_ROUTE_SELECT, {3, 1}, {logits}, {probs, slotRows, slots}),
            DDPRT_ERROR_INVALID_ARGUMENT);
  expectMessage((
               "ddprt_route(select): topk 3 is over the 2 experts"));
  EXPECT_EQ(route(DDPRT_ROUTE_GATHER, {}, {rows}, {result}),
            DDPRT_ERROR_INVALID_ARGUMENT);
  expectMessage("ddprt_route(gather): takes 2 inputs, 1 results and 0 params, "
                "got 1, 1 and 0");
  Buffer halves = zeros(DDPRT_DTYPE_BF16, 4);
  Buffer map = make(DDPRT_DTYPE_F32, {1, 0});
  EXPECT_EQ(route(DDPRT_ROUTE_GATHER, {}, {rows, map}, {halves}),
            DDPRT_ERROR_INVALID_ARGUMENT);
  expectMessage("ddprt_route(gather): result must have its input's dtype "
                "f32, got bf16");
  ddprt_tensor inPlace[] = {rows.tensor(), map.tensor()};
  ddprt_tensor onRows = rows.tensor();
  EXPECT_EQ(ddprt_route(context, DDPRT_ROUTE_GATHER, "test", nullptr, 0,
                        inPlace, 2, &onRows, 1),
            DDPRT_ERROR_INVALID_ARGUMENT);
  expectMessage("ddprt_route(gather): a result overlaps an input");
  // A fraction is no row; nor is a map over 2^24 rows exact.
  Buffer fraction = make(DDPRT_DTYPE_F32, {0.5, 1});
  EXPECT_EQ(route(DDPRT_ROUTE_GATHER, {}, {rows, fraction}, {result}),
            DDPRT_ERROR_INVALID_ARGUMENT);
  expectMessage("ddprt_route(gather) of 'test': map entry 0 is 0.5, not -1 "
                "nor a row below 2");
  // SELECT's results are written in different orders by the backends.
  Buffer shared = zeros(DDPRT_DTYPE_F32, 4);
  ddprt_tensor overlapping[] = {{shared.data, 2, DDPRT_DTYPE_F32, 0},
                                {shared.data, 2, DDPRT_DTYPE_F32, 0},
                                slots.tensor()};
  int64_t params[] = {1, 1};
  ddprt_tensor in = logits.tensor();
  EXPECT_EQ(ddprt_route(context, DDPRT_ROUTE_SELECT, "test", params, 2, &in,
                        1, overlapping, 3),
            DDPRT_ERROR_INVALID_ARGUMENT);
  expectMessage("ddprt_route(select): two results overlap");
  int64_t huge[] = {int64_t(1) << 40, int64_t(1) << 40};
  ddprt_tensor chunks[] = {rows.tensor(), result.tensor()};
  EXPECT_EQ(ddprt_route(context, DDPRT_ROUTE_UNSORT_CHUNKS, "test", huge, 2,
                        chunks, 1, &chunks[1], 1),
            DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(route(7, {}, {}, {}), DDPRT_ERROR_INVALID_ARGUMENT);
  expectMessage((
               "ddprt_route: unknown kernel 7 (expected a DDPRT_ROUTE_*)"));
}

TEST(RoutingMath, ExpMatchesTheLibraryToTwoUlp) {
  // Normal results within 2 ulp (4.5e-16 relative); subnormal ones (below
  // e^-708) within a few of their units.
  for (double x = -745; x <= 0; x += 0.37) {
    double expected = std::exp(x), got = ddprt::routing::expNonPositive(x);
    EXPECT_LE(std::fabs(got - expected),
              std::max(4.5e-16 * expected, 4 * 4.9e-324))
        << "x = " << x;
  }
  EXPECT_EQ(ddprt::routing::expNonPositive(0), 1.0);
  EXPECT_EQ(ddprt::routing::expNonPositive(-800), 0.0);
  EXPECT_TRUE(std::isnan(ddprt::routing::expNonPositive(nan)));
}

} // namespace
