//===- CheckedCount.cpp - Counts summed over a whole step -----------------===//

#include "ddp/Support/CheckedCount.h"

#include "llvm/Support/CheckedArithmetic.h"

using namespace ddp;

/// Applies `op` (one of llvm's checked operations) unless either side has
/// overflowed already.
template <typename Op>
static CheckedCount &apply(CheckedCount &self, int64_t &value,
                           bool &overflowed, CheckedCount other, Op op) {
  std::optional<int64_t> rhs = other.get();
  std::optional<int64_t> result;
  if (!overflowed && rhs)
    result = op(value, *rhs);
  if (result)
    value = *result;
  else
    overflowed = true;
  return self;
}

CheckedCount &CheckedCount::operator+=(CheckedCount other) {
  return apply(*this, value, overflowed, other,
               [](int64_t a, int64_t b) { return llvm::checkedAdd(a, b); });
}

CheckedCount &CheckedCount::operator-=(CheckedCount other) {
  return apply(*this, value, overflowed, other,
               [](int64_t a, int64_t b) { return llvm::checkedSub(a, b); });
}

CheckedCount &CheckedCount::operator*=(CheckedCount other) {
  return apply(*this, value, overflowed, other,
               [](int64_t a, int64_t b) { return llvm::checkedMul(a, b); });
}
