//===- CheckedCount.h - Counts summed over a whole step ---------*- C++ -*-===//
//
// The dialect bounds every tensor to less than 2^63 bytes, and the ranks of
// a mesh to int64; it cannot bound a sum over a module. Every total of
// bytes, elements or ranks over parameters, buckets or ops is therefore a
// CheckedCount: it remembers that it left int64, and the pass that made it
// reports that as an error instead of printing a wrapped negative number.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_SUPPORT_CHECKEDCOUNT_H
#define DDP_SUPPORT_CHECKEDCOUNT_H

#include <cstdint>
#include <optional>

namespace ddp {

class CheckedCount {
public:
  CheckedCount() = default;
  /*implicit*/ CheckedCount(int64_t value) : value(value) {}

  /// Whether every operation that made this count fit in int64.
  bool fits() const { return !overflowed; }
  /// The count, or nullopt when it does not fit.
  std::optional<int64_t> get() const {
    return overflowed ? std::nullopt : std::optional<int64_t>(value);
  }
  /// The count when it fits, else `fallback` (a saturated figure for a
  /// report that has already said the total does not fit).
  int64_t getOr(int64_t fallback) const { return overflowed ? fallback : value; }

  CheckedCount &operator+=(CheckedCount other);
  CheckedCount &operator-=(CheckedCount other);
  CheckedCount &operator*=(CheckedCount other);
  friend CheckedCount operator+(CheckedCount a, CheckedCount b) {
    return a += b;
  }
  friend CheckedCount operator-(CheckedCount a, CheckedCount b) {
    return a -= b;
  }
  friend CheckedCount operator*(CheckedCount a, CheckedCount b) {
    return a *= b;
  }
  /// The larger of the two; one that does not fit is larger than any.
  static CheckedCount max(CheckedCount a, CheckedCount b) {
    if (!a.fits() || !b.fits())
      return !a.fits() ? a : b;
    return a.value >= b.value ? a : b;
  }

private:
  /// `value op other` with one of llvm's checked operations, unless either
  /// side has overflowed already.
  template <typename Op> CheckedCount &apply(CheckedCount other, Op op);

  int64_t value = 0;
  bool overflowed = false;
};

} // namespace ddp

#endif // DDP_SUPPORT_CHECKEDCOUNT_H
