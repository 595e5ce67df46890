//===- RuntimeSession.cpp - ddp-run's own use of the runtime --------------===//

#include "RuntimeSession.h"

#include "ddp/Support/OutputFile.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

using namespace ddp;

static bool printsDiagnostics = true;

void ddp::setPrintsDiagnostics(bool prints) { printsDiagnostics = prints; }

static void printDiagnostic(llvm::HighlightColor kind, llvm::StringRef prefix,
                            const llvm::Twine &message) {
  if (!printsDiagnostics)
    return;
  std::string line;
  llvm::raw_string_ostream os(line);
  llvm::WithColor(os, kind) << "ddp-run: " << prefix << ": ";
  os << message << "\n";
  llvm::errs() << line;
}

void ddp::printError(const llvm::Twine &message) {
  printDiagnostic(llvm::HighlightColor::Error, "error", message);
}

void ddp::printWarning(const llvm::Twine &message) {
  printDiagnostic(llvm::HighlightColor::Warning, "warning", message);
}

/// Ends this process with status 1 at once. Not std::exit: its handlers
/// include the runtime's MPI_Finalize, which waits for the other ranks, so
/// that a rank failing alone left them waiting in their next collective
/// until the watchdog's timeout. Without it mpirun takes the exit as the
/// job's end and stops them.
[[noreturn]] static void exitNow() {
  llvm::outs().flush();
  llvm::errs().flush();
  std::fflush(nullptr);
  // An output file still open (a dump, a trace) is removed, not left half
  // written, as on an interrupt.
  llvm::sys::RunInterruptHandlers();
  std::_Exit(1);
}

void ddp::fail(const llvm::Twine &message) {
  printError(message);
  exitNow();
}

RuntimeSession::RuntimeSession(ddprt_context *context, llvm::StringRef meshAxes)
    : context(context) {
  int32_t worldRank = 0, worldSize = 1;
  check(ddprt_get_rank(context, &worldRank, &worldSize), "ddprt_get_rank");
  rank = worldRank;
  numRanks = worldSize;
  check(ddprt_group_create(context, meshAxes.str().c_str(), &worldGroup),
        "creating the group of all ranks");
}

void RuntimeSession::check(ddprt_status status, llvm::StringRef what) const {
  if (status == DDPRT_OK)
    return;
  printError("rank " + llvm::Twine(rank) + ": " + what +
             " failed: " + ddprt_last_error(context));
  exitNow();
}

std::vector<uint64_t>
RuntimeSession::gatherFromAllRanks(llvm::ArrayRef<uint64_t> words) {
  if (words.empty())
    return {};
  // Eight-byte elements; the collective moves them without arithmetic.
  std::vector<uint8_t> gathered = gatherFromAllRanks(
      llvm::ArrayRef(reinterpret_cast<const uint8_t *>(words.data()),
                     words.size() * 8),
      DDPRT_DTYPE_F64, int64_t(words.size()));
  std::vector<uint64_t> all(words.size() * numRanks);
  std::memcpy(all.data(), gathered.data(), gathered.size());
  return all;
}

std::vector<uint8_t> RuntimeSession::gatherFromAllRanks(const void *data,
                                                        int32_t dtype,
                                                        int64_t numel) {
  int64_t bytes = numel * getRuntimeElementBytes(dtype);
  void *gathered = nullptr;
  check(ddprt_alloc(context, dtype, numel * numRanks, &gathered),
        "ddprt_alloc");
  check(ddprt_all_gather(context, worldGroup, dtype, numel, data, gathered,
                         /*handle=*/nullptr),
        "gathering a parameter from every rank");
  std::vector<uint8_t> host(bytes * numRanks);
  check(ddprt_read(context, host.data(), gathered, host.size()), "ddprt_read");
  check(ddprt_free(context, gathered), "ddprt_free");
  return host;
}

std::vector<uint8_t>
RuntimeSession::gatherFromAllRanks(llvm::ArrayRef<uint8_t> host, int32_t dtype,
                                   int64_t numel) {
  void *buffer = nullptr;
  check(ddprt_alloc(context, dtype, numel, &buffer), "ddprt_alloc");
  check(ddprt_write(context, buffer, host.data(), int64_t(host.size())),
        "ddprt_write");
  std::vector<uint8_t> gathered = gatherFromAllRanks(buffer, dtype, numel);
  check(ddprt_free(context, buffer), "ddprt_free");
  return gathered;
}

std::vector<uint8_t>
RuntimeSession::broadcastFromRank(llvm::ArrayRef<uint8_t> host, int32_t dtype,
                                  int64_t numel, int root) {
  int64_t bytes = numel * getRuntimeElementBytes(dtype);
  void *buffer = nullptr;
  check(ddprt_alloc(context, dtype, numel, &buffer), "ddprt_alloc");
  if (rank == root)
    check(ddprt_write(context, buffer, host.data(), bytes), "ddprt_write");
  check(ddprt_broadcast(context, worldGroup, root, dtype, numel, buffer, buffer,
                        /*handle=*/nullptr),
        "broadcasting a parameter from rank " + std::to_string(root));
  std::vector<uint8_t> result(static_cast<size_t>(bytes));
  check(ddprt_read(context, result.data(), buffer, bytes), "ddprt_read");
  check(ddprt_free(context, buffer), "ddprt_free");
  return result;
}

std::vector<uint8_t> RuntimeSession::readParam(int32_t param, int64_t bytes) {
  std::vector<uint8_t> host(bytes);
  check(ddprt_param_gather(context, param, host.data(), bytes),
        "ddprt_param_gather");
  return host;
}

RuntimeSession::OptimizerState
RuntimeSession::readOptimizerState(int32_t param, int32_t state) {
  OptimizerState result;
  int64_t numel = 0, adamSteps = 0;
  check(ddprt_param_optimizer_state(context, param, state, &result.begin,
                                    &numel, &adamSteps, nullptr, 0),
        "ddprt_param_optimizer_state");
  result.values.resize(size_t(numel));
  int64_t bytes = numel * int64_t(sizeof(float));
  check(ddprt_param_optimizer_state(context, param, state, &result.begin,
                                    &numel, &adamSteps, result.values.data(),
                                    bytes),
        "ddprt_param_optimizer_state");
  return result;
}

bool RuntimeSession::isStoredSharded(int32_t param) {
  int32_t group = -1;
  check(ddprt_param_stored(context, param, &group, nullptr, nullptr),
        "ddprt_param_stored");
  return group >= 0;
}

void RuntimeSession::finalize() {
  ddprt_status status = ddprt_finalize(context);
  // The context is gone even when finalizing failed; the message is then
  // ddprt_last_error(NULL)'s.
  context = nullptr;
  check(status, "ddprt_finalize");
}

/// Writes `name` so that the line stays one line of four fields: a
/// backslash as \\, a byte up to the space or DEL as \xhh, the rest as it is
/// (docs/ddp-run.md#options). The launcher's writeEscapedName (ddp-launch.c)
/// writes the same bytes, so that the two dumps compare with cmp.
static void writeEscapedName(llvm::raw_ostream &os, llvm::StringRef name) {
  for (unsigned char byte : name) {
    if (byte == '\\')
      os << "\\\\";
    else if (byte <= ' ' || byte == 0x7f)
      os << "\\x" << llvm::format_hex_no_prefix(byte, 2);
    else
      os << byte;
  }
}

int64_t ddp::findNonFinite(const uint8_t *data, int64_t numel,
                           ElementType type) {
  // The exponent bits of each type, above its stored mantissa bits.
  unsigned bits = unsigned(getElementBytes(type)) * 8;
  unsigned mantissa = type == ElementType::F16    ? 10
                      : type == ElementType::BF16 ? 7
                      : type == ElementType::F32  ? 23
                                                  : 52;
  unsigned exponent = bits - 1 - mantissa;
  uint64_t mask = ((uint64_t(1) << exponent) - 1) << mantissa;
  for (int64_t i = 0; i < numel; ++i) {
    uint64_t raw = 0;
    std::memcpy(&raw, data + i * (bits / 8), bits / 8);
    if ((raw & mask) == mask)
      return i;
  }
  return -1;
}

/// One line of a dump.
static void writeParamLine(llvm::raw_ostream &os, llvm::StringRef name,
                           int32_t dtype, int64_t numel,
                           llvm::ArrayRef<uint8_t> bytes) {
  writeEscapedName(os, name);
  os << " " << stringifyElementType(getElementTypeOfRuntimeDType(dtype)) << " "
     << numel << " ";
  for (uint8_t byte : bytes)
    os << llvm::format_hex_no_prefix(byte, 2);
  os << "\n";
}

void RuntimeSession::dumpParams(llvm::StringRef path,
                                llvm::ArrayRef<std::string> order) {
  check(ddprt_finish_param_sync(context), "ddprt_finish_param_sync");
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> output;
  if (rank == 0) {
    output = mlir::openOutputFile(path, &error);
    if (!output)
      fail(error);
  }
  // The first parameter holding a NaN or an Inf, and the names no rank
  // holds, for rank 0's warnings.
  std::optional<std::string> nonFinite;
  std::vector<std::string> unheld;
  auto noteNonFinite = [&](llvm::StringRef name, int32_t dtype, int64_t numel,
                           llvm::ArrayRef<uint8_t> bytes) {
    if (nonFinite || !output)
      return;
    int64_t element =
        findNonFinite(bytes.data(), numel, getElementTypeOfRuntimeDType(dtype));
    if (element >= 0)
      nonFinite = "parameter '" + name.str() + "' holds a NaN or an Inf (" +
                  "element " + std::to_string(element) + ")";
  };
  // Every rank's (parameter + 1, dtype, numel) for each name of `order`,
  // 0 where it holds none: one gather, which also says whether every rank
  // holds every name (all but a pipeline's stages do).
  std::vector<uint64_t> mine;
  for (const std::string &name : order) {
    int32_t param = -1, dtype = 0;
    int64_t numel = 0;
    if (hasParam(name)) {
      check(ddprt_param_lookup(context, name.c_str(), &param),
            "ddprt_param_lookup");
      check(ddprt_param_info(context, param, nullptr, &dtype, &numel),
            "ddprt_param_info");
    }
    mine.insert(mine.end(),
                {uint64_t(param + 1), uint64_t(dtype), uint64_t(numel)});
  }
  std::vector<uint64_t> all = gatherFromAllRanks(mine);
  size_t words = mine.size();
  auto word = [&](int rank, size_t index, size_t field) {
    return all[rank * words + 3 * index + field];
  };
  bool everywhere = true;
  for (int each = 0; each < numRanks; ++each)
    for (size_t index = 0; index < order.size(); ++index)
      everywhere &= word(each, index, 0) != 0;
  if (everywhere) {
    // Every rank reads every parameter (a sharded one is gathered over its
    // group); rank 0 writes, in its registration order.
    int32_t count = 0;
    check(ddprt_param_count(context, &count), "ddprt_param_count");
    for (int32_t param = 0; param < count; ++param) {
      const char *name = nullptr;
      int32_t dtype = 0;
      int64_t numel = 0;
      check(ddprt_param_info(context, param, &name, &dtype, &numel),
            "ddprt_param_info");
      std::vector<uint8_t> bytes =
          readParam(param, numel * getRuntimeElementBytes(dtype));
      if (output)
        writeParamLine(output->os(), name, dtype, numel, bytes);
      noteNonFinite(name, dtype, numel, bytes);
    }
  } else {
    // Each parameter from the lowest rank that holds it: the holders read
    // it (over its group, where sharded), and the lowest one broadcasts it
    // when it is not rank 0. A name no rank holds (a schedule that dropped
    // it, not verified) is left out.
    for (auto [index, name] : llvm::enumerate(order)) {
      int holder = 0;
      while (holder < numRanks && word(holder, index, 0) == 0)
        ++holder;
      if (holder == numRanks) {
        unheld.push_back(name);
        continue;
      }
      int32_t dtype = int32_t(word(holder, index, 1));
      int64_t numel = int64_t(word(holder, index, 2));
      std::vector<uint8_t> bytes;
      if (int32_t param = int32_t(word(rank, index, 0)) - 1; param >= 0)
        bytes = readParam(
            param, int64_t(word(rank, index, 2)) *
                       getRuntimeElementBytes(int32_t(word(rank, index, 1))));
      if (holder != 0)
        bytes = broadcastFromRank(bytes, dtype, numel, holder);
      if (output)
        writeParamLine(output->os(), name, dtype, numel, bytes);
      noteNonFinite(name, dtype, numel, bytes);
    }
  }
  if (output && !unheld.empty())
    printWarning("--dump-params: no rank holds " + llvm::Twine(unheld.size()) +
                 " of the input's parameters (" + unheld.front() +
                 (unheld.size() > 1 ? ", ..." : "") +
                 "), left out of the dump: a program without them ran");
  if (output && nonFinite)
    printWarning("--dump-params: " + *nonFinite +
                 "; values that overflow compare equal whatever computed "
                 "them: compare runs under --verify, whose values stay "
                 "bounded, or of fewer layers or steps");
  if (!output)
    return;
  if (llvm::Error error = finishOutputFile(*output, path))
    fail(llvm::toString(std::move(error)));
}

bool RuntimeSession::hasParam(llvm::StringRef name) {
  int32_t count = 0;
  check(ddprt_param_count(context, &count), "ddprt_param_count");
  for (int32_t param = 0; param < count; ++param) {
    const char *registered = nullptr;
    check(ddprt_param_info(context, param, &registered, nullptr, nullptr),
          "ddprt_param_info");
    if (registered && name == registered)
      return true;
  }
  return false;
}
