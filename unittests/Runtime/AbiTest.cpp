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

/// The lowering declares every entry point of the ABI's list by its name:
/// each must be a symbol that the shared library exports.
TEST(AbiTest, EverySymbolNameIsExportedByTheLibrary) {
  void *library = dlopen(DDPRT_LIBRARY_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  const char *names[] = {
#define DDPRT_ENTRY_POINT(Enumerator, Result, Function, Parameters) #Function,
#include "ddp/Runtime/RuntimeFunctions.def"
  };
  for (const char *name : names)
    EXPECT_NE(dlsym(library, name), nullptr) << name << " is not exported";
  // And nothing internal leaks out (the library is built hidden).
  EXPECT_EQ(dlsym(library, "_ZN5ddprt10fatalErrorERKNSt7__cxx1112basic_"
                           "stringIcSt11char_traitsIcESaIcEEE"),
            nullptr);
  dlclose(library);
}

} // namespace
