//===- RuntimeTestSupport.h - Helpers for tests of the C ABI ----*- C++ -*-===//
//
// The tests of the C entry points run on every rank under mpirun (2 or 4
// ranks; those of avg on 3 too). The job is the mesh "dp=2,tp=<size/2>"
// ("dp=<size>,tp=1" for an odd size); the expected results are
// computed here from that layout by hand, independently of the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef DDPRT_UNITTESTS_RUNTIMETESTSUPPORT_H
#define DDPRT_UNITTESTS_RUNTIMETESTSUPPORT_H

#include "ddp/Runtime/ddprt.h"

#include "Element.h"

#include "gtest/gtest.h"

#include <mpi.h>

#include <cstring>
#include <string>
#include <vector>

namespace ddprt::test {

inline int worldRank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

inline int worldSize() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

/// dp=2 times tp=size/2 for an even size; dp=size, tp=1 for an odd one
/// (the averaging tests run on 3 ranks).
inline int dpSizeForWorld() {
  int size = worldSize();
  return size % 2 == 0 ? 2 : size;
}

inline std::string meshForWorld() {
  int dpSize = dpSizeForWorld();
  return "dp=" + std::to_string(dpSize) +
         ",tp=" + std::to_string(worldSize() / dpSize);
}

/// The members of this rank's group over `axes` of meshForWorld(), in group
/// order, and this rank's index among them: worked out by hand.
struct ExpectedGroup {
  std::vector<int> members;
  int rank = 0;
};

inline ExpectedGroup expectedGroup(const std::string &axes) {
  int size = worldSize();
  int dpSize = dpSizeForWorld();
  int tpSize = size / dpSize;
  int me = worldRank();
  int dp = me / tpSize, tp = me % tpSize;
  ExpectedGroup group;
  if (axes == "dp") {
    for (int d = 0; d < dpSize; ++d)
      group.members.push_back(d * tpSize + tp);
    group.rank = dp;
  } else if (axes == "tp") {
    for (int t = 0; t < tpSize; ++t)
      group.members.push_back(dp * tpSize + t);
    group.rank = tp;
  } else if (axes == "dp,tp") {
    for (int r = 0; r < size; ++r)
      group.members.push_back(r);
    group.rank = me;
  } else if (axes == "tp,dp") {
    for (int t = 0; t < tpSize; ++t)
      for (int d = 0; d < dpSize; ++d)
        group.members.push_back(d * tpSize + t);
    group.rank = tp * dpSize + dp;
  } else {
    ADD_FAILURE() << "no expected layout for group " << axes;
  }
  return group;
}

inline int64_t dtypeSize(int32_t dtype) { return elementSize(DType(dtype)); }

inline const char *dtypeLabel(int32_t dtype) { return dtypeName(DType(dtype)); }

/// Encodes values (exactly representable in `dtype`) as its bytes.
inline std::vector<char> encode(int32_t dtype,
                                const std::vector<double> &values) {
  std::vector<char> bytes(values.size() * size_t(dtypeSize(dtype)));
  dispatchDType(DType(dtype), [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < values.size(); ++i) {
      T element = ElementTraits<T>::fromDouble(values[i]);
      std::memcpy(bytes.data() + i * sizeof(T), &element, sizeof(T));
    }
  });
  return bytes;
}

inline std::vector<double> decode(int32_t dtype,
                                  const std::vector<char> &bytes) {
  std::vector<double> values(bytes.size() / size_t(dtypeSize(dtype)));
  dispatchDType(DType(dtype), [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < values.size(); ++i) {
      T element;
      std::memcpy(&element, bytes.data() + i * sizeof(T), sizeof(T));
      values[i] = ElementTraits<T>::toDouble(element);
    }
  });
  return values;
}

/// Asserts a ddprt call succeeded, printing the runtime's message if not.
#define DDPRT_EXPECT_OK(context, call)                                         \
  EXPECT_EQ((call), DDPRT_OK) << ddprt_last_error(context)
#define DDPRT_ASSERT_OK(context, call)                                         \
  ASSERT_EQ((call), DDPRT_OK) << ddprt_last_error(context)

/// A CPU context over meshForWorld() with errors returned, shared by the
/// tests of one suite, with its groups created.
class RuntimeSuite : public ::testing::Test {
protected:
  static void SetUpTestSuite() { startContext(DDPRT_FLAG_RETURN_ERRORS); }

  /// For suites whose context needs other ddprt_init flags.
  static void startContext(int32_t flags) {
    ASSERT_EQ(ddprt_init(DDPRT_ABI_VERSION, meshForWorld().c_str(),
                         DDPRT_BACKEND_CPU, flags, 3000, nullptr, &context),
              DDPRT_OK)
        << ddprt_last_error(nullptr);
    for (const char *axes : {"dp", "tp", "dp,tp", "tp,dp"}) {
      int32_t group = -1;
      ASSERT_EQ(ddprt_group_create(context, axes, &group), DDPRT_OK)
          << ddprt_last_error(context);
      groups().push_back(group);
    }
  }

  static void TearDownTestSuite() {
    if (context) {
      EXPECT_EQ(ddprt_finalize(context), DDPRT_OK) << ddprt_last_error(nullptr);
    }
    context = nullptr;
    groups().clear();
  }

  static int32_t groupOf(const std::string &axes) {
    const char *names[] = {"dp", "tp", "dp,tp", "tp,dp"};
    for (int i = 0; i < 4; ++i)
      if (axes == names[i])
        return groups()[size_t(i)];
    return -1;
  }

  /// A buffer holding `values` as `dtype`.
  static void *upload(int32_t dtype, const std::vector<double> &values) {
    void *data = nullptr;
    EXPECT_EQ(ddprt_alloc(context, dtype, int64_t(values.size()), &data),
              DDPRT_OK)
        << ddprt_last_error(context);
    std::vector<char> bytes = encode(dtype, values);
    EXPECT_EQ(ddprt_write(context, data, bytes.data(), int64_t(bytes.size())),
              DDPRT_OK)
        << ddprt_last_error(context);
    return data;
  }

  static std::vector<double> download(int32_t dtype, const void *data,
                                      int64_t numel) {
    std::vector<char> bytes(size_t(numel * dtypeSize(dtype)));
    EXPECT_EQ(ddprt_read(context, bytes.data(), data, int64_t(bytes.size())),
              DDPRT_OK)
        << ddprt_last_error(context);
    return decode(dtype, bytes);
  }

  static std::vector<int32_t> &groups() {
    static std::vector<int32_t> created;
    return created;
  }

  static inline ddprt_context *context = nullptr;
};

} // namespace ddprt::test

#endif // DDPRT_UNITTESTS_RUNTIMETESTSUPPORT_H
