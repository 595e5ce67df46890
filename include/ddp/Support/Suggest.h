//===- Suggest.h - The closest of a set of names ----------------*- C++ -*-===//
//
// For messages about a misspelt name (an option, one of an option's values):
// the known name it is closest to, by LLVM's edit distance, when it is close
// enough to be what was meant.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_SUPPORT_SUGGEST_H
#define DDP_SUPPORT_SUGGEST_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace ddp {

/// The candidate closest to `name` (fewest single-character insertions,
/// deletions, replacements; the first of equals), if at most a third of
/// `name`'s characters (and at least one) must change.
std::optional<llvm::StringRef>
findClosestName(llvm::StringRef name, llvm::ArrayRef<llvm::StringRef> candidates);

/// "; did you mean 'x'?" for the closest candidate, or "".
std::string didYouMean(llvm::StringRef name,
                       llvm::ArrayRef<llvm::StringRef> candidates);

} // namespace ddp

#endif // DDP_SUPPORT_SUGGEST_H
