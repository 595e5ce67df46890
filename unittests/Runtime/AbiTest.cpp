//===- AbiTest.cpp - The ABI header seen from C and C++ -------------------===//

#include "ddp/Runtime/ddprt.h"

#include "gtest/gtest.h"

#include <cstddef>
#include <cstring>
#include <dlfcn.h>

extern "C" size_t ddprtTestTensorSizeInC(void);
extern "C" size_t ddprtTestTensorDtypeOffsetInC(void);
extern "C" int ddprtTestAbiVersionInC(void);

namespace {

TEST(AbiTest, CAndCppAgreeOnTheLayout) {
  EXPECT_EQ(ddprtTestTensorSizeInC(), sizeof(ddprt_tensor));
  EXPECT_EQ(ddprtTestTensorDtypeOffsetInC(), offsetof(ddprt_tensor, dtype));
  EXPECT_EQ(ddprtTestAbiVersionInC(), DDPRT_ABI_VERSION);
  EXPECT_EQ(sizeof(ddprt_tensor), 24u);
}

/// The lowering declares the functions by these names: each must be a
/// symbol that the shared library exports.
TEST(AbiTest, EverySymbolNameIsExportedByTheLibrary) {
  void *library = dlopen(DDPRT_LIBRARY_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  const char *names[] = {DDPRT_SYM_INIT,
                         DDPRT_SYM_FINALIZE,
                         DDPRT_SYM_LAST_ERROR,
                         DDPRT_SYM_GET_RANK,
                         DDPRT_SYM_GET_BACKEND,
                         DDPRT_SYM_GROUP_CREATE,
                         DDPRT_SYM_GROUP_INFO,
                         DDPRT_SYM_ALLOC,
                         DDPRT_SYM_FREE,
                         DDPRT_SYM_COPY,
                         DDPRT_SYM_READ,
                         DDPRT_SYM_WRITE,
                         DDPRT_SYM_FILL_INPUT,
                         DDPRT_SYM_PARAM_REGISTER,
                         DDPRT_SYM_PARAM_LOOKUP,
                         DDPRT_SYM_PARAM_COUNT,
                         DDPRT_SYM_PARAM_INFO,
                         DDPRT_SYM_PARAM_DATA,
                         DDPRT_SYM_PARAM_READ,
                         DDPRT_SYM_GEMM,
                         DDPRT_SYM_COMPUTE,
                         DDPRT_SYM_ACCUMULATE,
                         DDPRT_SYM_SCALE,
                         DDPRT_SYM_CAST,
                         DDPRT_SYM_CHECK_FINITE,
                         DDPRT_SYM_ALL_REDUCE,
                         DDPRT_SYM_REDUCE_SCATTER,
                         DDPRT_SYM_ALL_GATHER,
                         DDPRT_SYM_SEND,
                         DDPRT_SYM_RECV,
                         DDPRT_SYM_WAIT,
                         DDPRT_SYM_JOIN,
                         DDPRT_SYM_SGD,
                         DDPRT_SYM_ADAM,
                         DDPRT_SYM_SYNCHRONIZE};
  for (const char *name : names)
    EXPECT_NE(dlsym(library, name), nullptr) << name << " is not exported";
  // And nothing internal leaks out (the library is built hidden).
  EXPECT_EQ(dlsym(library, "_ZN5ddprt10fatalErrorERKNSt7__cxx1112basic_"
                           "stringIcSt11char_traitsIcESaIcEEE"),
            nullptr);
  dlclose(library);
}

} // namespace
