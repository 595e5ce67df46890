//===- CheckedCount.cpp - Counts summed over a whole step -----------------===//

#include "ddp/Support/CheckedCount.h"

#include "llvm/Support/CheckedArithmetic.h"

using namespace ddp;

template <typename Op>
CheckedCount &CheckedCount::apply(CheckedCount other, Op op) {
  std::optional<int64_t> result;
  if (!overflowed && !other.overflowed)
    result = op(value, other.value);
  if (result)
    value = *result;
  else
    overflowed = true;
  return *this;
}

CheckedCount &CheckedCount::operator+=(CheckedCount other) {
  return apply(other,
               [](int64_t a, int64_t b) { return llvm::checkedAdd(a, b); });
}

CheckedCount &CheckedCount::operator-=(CheckedCount other) {
  return apply(other,
               [](int64_t a, int64_t b) { return llvm::checkedSub(a, b); });
}

CheckedCount &CheckedCount::operator*=(CheckedCount other) {
  return apply(other,
               [](int64_t a, int64_t b) { return llvm::checkedMul(a, b); });
}
