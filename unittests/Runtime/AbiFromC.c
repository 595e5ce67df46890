/*===- AbiFromC.c - ddprt.h compiled as C ----------------------------------===*
 *
 * The ABI header must stay plain C: this file is compiled by the C compiler
 * and reports the layout it sees, which AbiTest.cpp compares with C++'s.
 *
 *===----------------------------------------------------------------------===*/

#include "ddp/Runtime/ddprt.h"

size_t ddprtTestTensorSizeInC(void) { return sizeof(ddprt_tensor); }
size_t ddprtTestTensorDtypeOffsetInC(void) {
  return offsetof(ddprt_tensor, dtype);
}
int ddprtTestAbiVersionInC(void) { return DDPRT_ABI_VERSION; }
