//===- TpCommNumSplits.h - The tp-comm-num-splits option ---------*- C++ -*-===//
//
// The value of ddp-overlap-tp-comm's (and ddp-schedule's) tp-comm-num-splits,
// with its llvm::cl parser: a bad value is rejected where the options are
// parsed, by one parser, before any pass reads it.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_DIALECT_DDP_TRANSFORMS_TPCOMMNUMSPLITS_H
#define DDP_DIALECT_DDP_TRANSFORMS_TPCOMMNUMSPLITS_H

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cassert>
#include <cstdint>
#include <optional>

namespace ddp {

/// Chunks per pipelined GEMM: a positive count, or auto (the cost model
/// picks each GEMM's). Default-constructed, it is auto.
class TpCommNumSplits {
public:
  TpCommNumSplits() = default;
  static TpCommNumSplits getAuto() { return {}; }
  static TpCommNumSplits get(int64_t count) {
    assert(count >= 1 && "a split count is positive");
    TpCommNumSplits splits;
    splits.count = count;
    return splits;
  }

  bool isAuto() const { return count == 0; }
  /// The fixed count; nullopt for auto.
  std::optional<int64_t> getCount() const {
    return isAuto() ? std::nullopt : std::optional<int64_t>(count);
  }

  bool operator==(const TpCommNumSplits &other) const {
    return count == other.count;
  }
  bool operator!=(const TpCommNumSplits &other) const {
    return !(*this == other);
  }

private:
  /// 0 for auto.
  int64_t count = 0;
};

/// As the option is written: `auto` or the count.
inline llvm::raw_ostream &operator<<(llvm::raw_ostream &os,
                                     const TpCommNumSplits &splits) {
  if (splits.isAuto())
    return os << "auto";
  return os << *splits.getCount();
}

} // namespace ddp

namespace llvm::cl {

/// Stores the default, as for std::string, so that --help and
/// --print-options show it.
template <>
struct OptionValue<ddp::TpCommNumSplits> final
    : OptionValueCopy<ddp::TpCommNumSplits> {
  using WrapperType = ddp::TpCommNumSplits;
  OptionValue() = default;
  OptionValue(const ddp::TpCommNumSplits &value) { setValue(value); }
  OptionValue &operator=(const ddp::TpCommNumSplits &value) {
    setValue(value);
    return *this;
  }

private:
  void anchor() override {}
};

template <>
class parser<ddp::TpCommNumSplits>
    : public basic_parser<ddp::TpCommNumSplits> {
public:
  parser(Option &option) : basic_parser(option) {}

  /// Returns true on error, as llvm::cl's parsers do.
  bool parse(Option &option, StringRef argName, StringRef arg,
             ddp::TpCommNumSplits &value) {
    if (arg == "auto") {
      value = ddp::TpCommNumSplits::getAuto();
      return false;
    }
    int64_t count = 0;
    if (arg.getAsInteger(10, count) || count < 1)
      return option.error("must be 'auto' or a positive number, got '" + arg +
                              "'",
                          argName);
    value = ddp::TpCommNumSplits::get(count);
    return false;
  }

  StringRef getValueName() const override { return "auto|N"; }

  void printOptionDiff(const Option &option, const ddp::TpCommNumSplits &value,
                       const OptionValue<ddp::TpCommNumSplits> &defaultValue,
                       size_t globalWidth) const {
    printOptionName(option, globalWidth);
    outs() << "= " << value << " (default: ";
    if (defaultValue.hasValue())
      outs() << defaultValue.getValue();
    else
      outs() << "*no default*";
    outs() << ")\n";
  }

private:
  void anchor() override {}
};

} // namespace llvm::cl

#endif // DDP_DIALECT_DDP_TRANSFORMS_TPCOMMNUMSPLITS_H
