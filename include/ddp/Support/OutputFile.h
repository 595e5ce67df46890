//===- OutputFile.h - Write errors of output files --------------*- C++ -*-===//
//
// llvm::ToolOutputFile ends the process with "LLVM ERROR: IO failure on
// output stream", naming no file, when a write failed (a full disk,
// /dev/full, a file of /proc) and nobody cleared the error. Every tool
// finishes its output files with finishOutputFile instead of keep(), so that
// such a failure is an error naming the file and the reason, and the tool
// exits non-zero.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_SUPPORT_OUTPUTFILE_H
#define DDP_SUPPORT_OUTPUTFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/ToolOutputFile.h"

namespace ddp {

/// Flushes `file`, opened for `path` ("-": stdout), and keeps it when
/// everything written reached it; else removes it and fails with
/// "cannot write '<path>': <reason>". Either way the stream's error is
/// cleared, so that destroying it does not abort.
llvm::Error finishOutputFile(llvm::ToolOutputFile &file, llvm::StringRef path);

/// Flushes llvm::outs() and fails with "cannot write '<stdout>': <reason>"
/// when a write to it failed (`tool > /dev/full`), clearing its error: the
/// same abort at exit otherwise.
llvm::Error flushStdout();

} // namespace ddp

#endif // DDP_SUPPORT_OUTPUTFILE_H
