//===- OptionWords.h - Pass option text as MLIR reads it --------*- C++ -*-===//
//
// For messages about pass options, which need the words of an option string
// and the values an option takes before MLIR's parser (or llvm::cl behind
// it) rejects them in its own words.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_SUPPORT_OPTIONWORDS_H
#define DDP_SUPPORT_OPTIONWORDS_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <utility>

namespace ddp {

/// The `name=value` (or `name`, with an empty value) words of a pass option
/// string, split as MLIR's PassOptions::parseFromString splits them
/// (parseNextArg in mlir/lib/Pass/PassRegistry.cpp): a value holds spaces
/// inside quotes or braces; a quote with no partner is an ordinary
/// character; one outer pair of quotes or braces is dropped.
llvm::SmallVector<std::pair<llvm::StringRef, llvm::StringRef>>
splitOptionWords(llvm::StringRef text);

/// What llvm::cl::ValuesClass::apply hands its values to (it gives them to
/// an option's parser only): their names, in order.
struct OptionValueNames {
  llvm::SmallVector<llvm::StringRef> names;
  OptionValueNames &getParser() { return *this; }
  template <typename Value>
  void addLiteralOption(llvm::StringRef name, const Value &, llvm::StringRef) {
    names.push_back(name);
  }
};

/// Whether llvm::cl's bool parser takes `value` (an empty value is true).
bool isBoolOptionValue(llvm::StringRef value);

} // namespace ddp

#endif // DDP_SUPPORT_OPTIONWORDS_H
