//===- ParamShardTest.cpp - Parameters stored as their shard --------------===//
//
// ddprt_param_register_shard (FSDP's parameters between steps): a rank keeps
// only its elements of the bucket layout, initialised as a whole parameter
// would be; the shard copies and ddprt_param_gather see the whole value, and
// what would read or update it whole in place is an error.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestSupport.h"

#include "Seed.h"

#include <string>

using namespace ddprt::test;

namespace {

class ParamShardTest : public RuntimeSuite {
protected:
  static std::string lastError() { return ddprt_last_error(context); }
};

// A parameter of 6 elements at offset 1 of a bucket whose shards over the
// world just hold it: with 2 ranks rank 0 keeps elements [0, 3), rank 1
// [3, 6); with 4 ranks they keep 1, 2, 2 and 1.
TEST_F(ParamShardTest, ARankKeepsItsShardOnlyAndGathersTheWhole) {
  int32_t world = groupOf("dp,tp");
  int32_t rank = 0, size = 0;
  DDPRT_ASSERT_OK(context, ddprt_group_info(context, world, &rank, &size));
  const int64_t offset = 1, shardNumel = (6 + offset + size - 1) / size;
  int32_t param = -1;
  DDPRT_ASSERT_OK(context, ddprt_param_register_shard(
                               context, "stored.w", DDPRT_DTYPE_F32, 6, 7,
                               world, offset, shardNumel, &param));

  // This rank's slice of the bucket, in parameter elements.
  int64_t first = std::max<int64_t>(rank * shardNumel - offset, 0);
  int64_t last = std::min<int64_t>((rank + 1) * shardNumel - offset, 6);
  int32_t group = -2;
  int64_t begin = -1, numel = -1;
  DDPRT_EXPECT_OK(context,
                  ddprt_param_stored(context, param, &group, &begin, &numel));
  EXPECT_EQ(group, world);
  EXPECT_EQ(numel, std::max<int64_t>(last - first, 0));
  if (numel > 0) {
    EXPECT_EQ(begin, first);
  }

  // Gathered whole, it holds what ddprt_param_register gives a parameter
  // of that name: element i is seededValue(key, i) on every rank.
  uint64_t key = ddprt::seedKey(7, ddprt::paramStream("stored.w"));
  std::vector<char> bytes(24);
  DDPRT_ASSERT_OK(context, ddprt_param_gather(context, param, bytes.data(), 24));
  std::vector<double> initial = decode(DDPRT_DTYPE_F32, bytes);
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_EQ(initial[size_t(i)], ddprt::seededValue(key, uint64_t(i)))
        << "element " << i;

  // The shard copies read and write the rank's elements where they are.
  void *shard =
      upload(DDPRT_DTYPE_F32, std::vector<double>(size_t(shardNumel), -1.0));
  DDPRT_EXPECT_OK(context, ddprt_get_param_shard(context, world, param, offset,
                                                 shardNumel, shard));
  std::vector<double> read = download(DDPRT_DTYPE_F32, shard, shardNumel);
  for (int64_t index = 0; index < shardNumel; ++index) {
    int64_t element = rank * shardNumel + index - offset;
    double expected =
        element >= 0 && element < 6 ? initial[size_t(element)] : -1.0;
    EXPECT_EQ(read[size_t(index)], expected) << "shard element " << index;
  }
  std::vector<double> update(static_cast<size_t>(shardNumel));
  for (int64_t index = 0; index < shardNumel; ++index)
    update[size_t(index)] = 1000 + rank * shardNumel + index;
  void *updated = upload(DDPRT_DTYPE_F32, update);
  DDPRT_EXPECT_OK(context, ddprt_set_param_shard(context, world, param, offset,
                                                 shardNumel, updated));
  // Nothing is pending: every rank wrote the elements it keeps.
  DDPRT_EXPECT_OK(context, ddprt_finish_param_sync(context));
  DDPRT_ASSERT_OK(context, ddprt_param_gather(context, param, bytes.data(), 24));
  std::vector<double> gathered = decode(DDPRT_DTYPE_F32, bytes);
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_EQ(gathered[size_t(i)], 1000 + i + offset) << "element " << i;

  // ddprt_param_write keeps the rank's elements of a whole value.
  std::vector<double> whole{-6, -5, -4, -3, -2, -1};
  std::vector<char> wholeBytes = encode(DDPRT_DTYPE_F32, whole);
  DDPRT_EXPECT_OK(context,
                  ddprt_param_write(context, param, wholeBytes.data(), 24));
  DDPRT_ASSERT_OK(context, ddprt_param_gather(context, param, bytes.data(), 24));
  EXPECT_EQ(decode(DDPRT_DTYPE_F32, bytes), whole);

  for (void *buffer : {shard, updated})
    DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
}

// A parameter of 3 elements in shards of 4: rank 0 keeps all of it, the
// others none (no storage at all), and each still takes part in the
// gather, the copies and the write.
TEST_F(ParamShardTest, ARankWithNoElementsKeepsNothing) {
  int32_t world = groupOf("dp,tp");
  int32_t rank = 0, size = 0;
  DDPRT_ASSERT_OK(context, ddprt_group_info(context, world, &rank, &size));
  int32_t param = -1;
  DDPRT_ASSERT_OK(context,
                  ddprt_param_register_shard(context, "stored.small.w",
                                             DDPRT_DTYPE_F32, 3, 5, world, 0,
                                             4, &param));
  int64_t numel = -1;
  DDPRT_EXPECT_OK(context,
                  ddprt_param_stored(context, param, nullptr, nullptr, &numel));
  EXPECT_EQ(numel, rank == 0 ? 3 : 0);
  uint64_t key = ddprt::seedKey(5, ddprt::paramStream("stored.small.w"));
  std::vector<char> bytes(12);
  DDPRT_ASSERT_OK(context, ddprt_param_gather(context, param, bytes.data(), 12));
  std::vector<double> gathered = decode(DDPRT_DTYPE_F32, bytes);
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_EQ(gathered[size_t(i)], ddprt::seededValue(key, uint64_t(i)));
  void *shard = upload(DDPRT_DTYPE_F32, std::vector<double>(4, 9.0));
  DDPRT_EXPECT_OK(context,
                  ddprt_get_param_shard(context, world, param, 0, 4, shard));
  std::vector<double> read = download(DDPRT_DTYPE_F32, shard, 4);
  for (int64_t i = 0; i < 4; ++i) {
    double expected = rank == 0 && i < 3 ? gathered[size_t(i)] : 9.0;
    EXPECT_EQ(read[size_t(i)], expected) << "shard element " << i;
  }
  DDPRT_EXPECT_OK(context,
                  ddprt_set_param_shard(context, world, param, 0, 4, shard));
  std::vector<char> whole = encode(DDPRT_DTYPE_F32, {7, 8, 9});
  DDPRT_EXPECT_OK(context, ddprt_param_write(context, param, whole.data(), 12));
  DDPRT_ASSERT_OK(context, ddprt_param_gather(context, param, bytes.data(), 12));
  EXPECT_EQ(decode(DDPRT_DTYPE_F32, bytes), (std::vector<double>{7, 8, 9}));
  DDPRT_EXPECT_OK(context, ddprt_free(context, shard));
}

// What reads or updates the whole parameter in place, and a shard copy of
// another layout, are errors that name the parameter and what to use.
TEST_F(ParamShardTest, WholeAccessAndOtherLayoutsAreErrors) {
  int32_t world = groupOf("dp,tp");
  int32_t rank = 0, size = 0;
  DDPRT_ASSERT_OK(context, ddprt_group_info(context, world, &rank, &size));
  int32_t param = -1;
  DDPRT_ASSERT_OK(context, ddprt_param_register_shard(
                               context, "stored.errors.w", DDPRT_DTYPE_F32,
                               4 * size, 1, world, 0, 4, &param));
  void *data = nullptr;
  EXPECT_EQ(ddprt_param_data(context, param, &data),
            DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("'stored.errors.w' is stored sharded over "
                             "'dp,tp' (this rank holds its elements [" +
                             std::to_string(4 * rank) + ", " +
                             std::to_string(4 * rank + 4) + ")"),
            std::string::npos)
      << lastError();
  EXPECT_NE(lastError().find("ddprt_param_gather reads it whole"),
            std::string::npos);
  std::vector<char> bytes(size_t(16 * size));
  EXPECT_EQ(ddprt_param_read(context, param, bytes.data(), 16 * size),
            DDPRT_ERROR_INVALID_ARGUMENT);
  void *grad = upload(DDPRT_DTYPE_F32, std::vector<double>(size_t(4 * size)));
  EXPECT_EQ(ddprt_sgd(context, param, DDPRT_DTYPE_F32, grad, 0.1),
            DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("stored sharded"), std::string::npos);

  // Another layout: 8 elements a shard instead of 4.
  void *shard = upload(DDPRT_DTYPE_F32, std::vector<double>(8));
  EXPECT_EQ(ddprt_get_param_shard(context, world, param, 0, 8, shard),
            DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("is stored as its shard of a bucket of 4 "
                             "elements per rank at offset 0 over 'dp,tp', "
                             "not of 8 at offset 0"),
            std::string::npos)
      << lastError();
  // A parameter that does not lie in its bucket is refused at registration.
  int32_t outside = -1;
  EXPECT_EQ(ddprt_param_register_shard(context, "stored.outside.w",
                                       DDPRT_DTYPE_F32, 4 * size, 1, world, 1,
                                       4, &outside),
            DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("does not lie in a bucket"), std::string::npos);
  // A wrong size for the gather.
  EXPECT_EQ(ddprt_param_gather(context, param, bytes.data(), 4),
            DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("bytes is 4 but parameter 'stored.errors.w'"),
            std::string::npos);
  for (void *buffer : {grad, shard})
    DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
}

} // namespace
