//===- OutputFile.cpp - Reporting the write errors of an output file ------===//

#include "ddp/Support/OutputFile.h"

using namespace llvm;

/// Flushes or closes `os` (opened for `path`) and clears its error; returns
/// the error.
static Error finishStream(raw_fd_ostream &os, StringRef path) {
  // Closing reports what only close sees (a network file system's write
  // back); stdout stays open for the tool's other output.
  if (path == "-")
    os.flush();
  else
    os.close();
  std::error_code error = os.error();
  os.clear_error();
  if (!error)
    return Error::success();
  return createStringError(error, "cannot write '%s': %s",
                           path == "-" ? "<stdout>" : path.str().c_str(),
                           error.message().c_str());
}

Error ddp::finishOutputFile(ToolOutputFile &file, StringRef path) {
  Error error = finishStream(file.os(), path);
  // Not kept, the file is removed when `file` goes: no half-written output.
  if (!error)
    file.keep();
  return error;
}

Error ddp::flushStdout() { return finishStream(outs(), "-"); }
