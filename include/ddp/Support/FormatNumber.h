//===- FormatNumber.h - Numbers in messages as written ----------*- C++ -*-===//
//
// An error that echoes a number the user gave must show the number that was
// wrong: `%.2f` or `%g` round 1.0000001 to "1.00" or "1", which reads as a
// valid value and hides the mistake. And sizes and counts as people read
// them in reports (bytes in binary units, parameters in K/M/B).
//
//===----------------------------------------------------------------------===//

#ifndef DDP_SUPPORT_FORMATNUMBER_H
#define DDP_SUPPORT_FORMATNUMBER_H

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace ddp {

/// `value` with the fewest significant digits that read back as the same
/// double, in `%g` notation, with an integer part below 10^17 written out:
/// 1.0000001, -1e-12, 0.1, 370, 1e+20.
std::string formatShortest(double value);

/// "1.50 GiB", "312 bytes".
std::string formatBytes(int64_t bytes);

/// A count as people read model sizes: 166656 reads 166.7K, 6738415616
/// 6.74B (K, M, B, T at 10^3, 10^6, 10^9, 10^12; three significant digits
/// or more); below 1000 the integer.
std::string formatCount(double value);

/// `value` as llvm::json writes it with `indent` (keys sorted), but each
/// non-integral number in formatShortest's form: a learning rate of 3e-4
/// reads 0.0003, not the 17 digits 0.00029999999999999997.
void writeJSONShortest(llvm::raw_ostream &os, const llvm::json::Value &value,
                       unsigned indent = 2);

} // namespace ddp

#endif // DDP_SUPPORT_FORMATNUMBER_H
