//===- StepVerifier.cpp - Bitwise comparison of parameters ----------------===//

#include "StepVerifier.h"

#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/IR/MeshAxes.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/Format.h"

#include <algorithm>
#include <cstring>

using namespace mlir;
using namespace ddp;

/// The mesh axes of the all-reduce that produces the gradient an optimizer
/// update consumes, looking through the ops that keep values per element.
static SmallVector<std::string> findReductionAxes(Value grad) {
  while (Operation *producer = grad.getDefiningOp()) {
    if (auto allReduce = dyn_cast<AllReduceOp>(producer)) {
      SmallVector<std::string> axes;
      for (StringRef axis : allReduce.getAxes().getAsValueRange<StringAttr>())
        axes.push_back(axis.str());
      return axes;
    }
    if (auto cast = dyn_cast<CastOp>(producer))
      grad = cast.getInput();
    else if (auto scale = dyn_cast<ScaleOp>(producer))
      grad = scale.getInput();
    else if (auto gradReady = dyn_cast<GradReadyOp>(producer))
      grad = gradReady.getGrad();
    else if (auto unpack = dyn_cast<BucketUnpackOp>(producer))
      grad = unpack.getBucket();
    else
      break;
  }
  return {};
}

SmallVector<ParamDescription> ddp::describeParams(ModuleOp reference) {
  llvm::StringMap<SmallVector<std::string>> replicaAxes;
  reference.walk([&](Operation *op) {
    if (auto sgd = dyn_cast<SGDOp>(op))
      replicaAxes[sgd.getParam()] = findReductionAxes(sgd.getGrad());
    else if (auto adam = dyn_cast<AdamOp>(op))
      replicaAxes[adam.getParam()] = findReductionAxes(adam.getGrad());
  });
  // A parameter whose update no reduction feeds (a broken step) must still
  // agree across the axes it is replicated over: the dense layers' and the
  // experts' data-parallel axes (MeshAxes.h).
  SmallVector<std::string> dataParallelAxes, expertDataParallelAxes;
  for (auto mesh : reference.getOps<MeshOp>())
    for (StringRef axis : mesh.getAxisNames().getAsValueRange<StringAttr>()) {
      if (isDataParallelAxis(axis))
        dataParallelAxes.push_back(axis.str());
      if (getAxisRoles(axis).expert == ExpertRole::DataParallel)
        expertDataParallelAxes.push_back(axis.str());
    }
  SmallVector<ParamDescription> params;
  for (auto param : reference.getOps<ParamOp>()) {
    RankedTensorType type = param.getTensorType();
    SmallVector<std::string> axes = replicaAxes.lookup(param.getSymName());
    if (axes.empty())
      axes = param.getExpert() ? expertDataParallelAxes : dataParallelAxes;
    params.push_back({param.getSymName().str(),
                      SmallVector<int64_t>(type.getShape()),
                      type.getElementType(), axes});
  }
  return params;
}

StepVerifier::StepVerifier(RuntimeSession &session,
                           ArrayRef<ParamDescription> params,
                           MeshDescription mesh, ArrayRef<Candidate> candidates)
    : session(session), mesh(std::move(mesh)), candidates(candidates) {
  ddprt_context *context = session.getContext();
  for (const ParamDescription &param : params) {
    Checked entry{param, 0, 0, 0, {}};
    session.check(
        ddprt_param_lookup(context, param.name.c_str(), &entry.reference),
        "looking up parameter '" + param.name + "'");
    session.check(ddprt_param_info(context, entry.reference, nullptr,
                                   &entry.dtype, &entry.numel),
                  "ddprt_param_info");
    for (const Candidate &candidate : candidates) {
      std::string name = candidate.paramPrefix + param.name;
      int32_t id = -1;
      if (!candidate.partial || session.hasParam(name))
        session.check(ddprt_param_lookup(context, name.c_str(), &id),
                      "looking up parameter '" + name + "'");
      entry.candidates.push_back(id);
    }
    checked.push_back(entry);
  }
}

void StepVerifier::copyInitialValues() {
  // Through host memory, so that a candidate stored sharded takes its
  // shard of the reference's value.
  ddprt_context *context = session.getContext();
  for (const Checked &entry : checked) {
    int64_t bytes = entry.numel * getRuntimeElementBytes(entry.dtype);
    // On every rank: reading a sharded reference is a collective.
    std::vector<uint8_t> initial = session.readParam(entry.reference, bytes);
    for (int32_t candidate : entry.candidates) {
      if (candidate < 0)
        continue;
      session.check(
          ddprt_param_write(context, candidate, initial.data(), bytes),
          "copying the initial parameters");
    }
  }
  session.check(ddprt_synchronize(context), "ddprt_synchronize");
}

int StepVerifier::getReplicaLeader(int rank, ArrayRef<std::string> axes) const {
  // Ranks are laid out row-major over the mesh, the first axis slowest.
  SmallVector<int64_t> coordinates(mesh.shape.size());
  for (int i = int(mesh.shape.size()) - 1; i >= 0; --i) {
    coordinates[i] = rank % mesh.shape[i];
    rank /= mesh.shape[i];
  }
  int leader = 0;
  for (auto [i, axis] : llvm::enumerate(mesh.axes)) {
    int64_t coordinate = llvm::is_contained(axes, axis) ? 0 : coordinates[i];
    leader = leader * mesh.shape[i] + coordinate;
  }
  return leader;
}

/// "3.5 (0x40600000)": the value and its bits.
static std::string formatElement(const uint8_t *data, Type elementType) {
  unsigned bits = elementType.getIntOrFloatBitWidth();
  uint64_t raw = 0;
  std::memcpy(&raw, data, bits / 8);
  llvm::APFloat value(cast<FloatType>(elementType).getFloatSemantics(),
                      llvm::APInt(bits, raw));
  SmallString<32> text;
  value.toString(text);
  std::string result;
  llvm::raw_string_ostream os(result);
  os << text << " (" << llvm::format_hex(raw, 2 + bits / 4) << ")";
  return result;
}

/// "element 17 [0, 17]".
static std::string formatIndex(int64_t flat, ArrayRef<int64_t> shape) {
  SmallVector<int64_t> index(shape.size());
  int64_t rest = flat;
  for (int i = int(shape.size()) - 1; i >= 0; --i) {
    index[i] = rest % shape[i];
    rest /= shape[i];
  }
  std::string result = "element " + std::to_string(flat) + " [";
  llvm::raw_string_ostream os(result);
  llvm::interleaveComma(index, os);
  os << "]";
  return result;
}

/// The first element where `lhs` and `rhs` differ bitwise, or -1.
static int64_t findFirstDifference(const uint8_t *lhs, const uint8_t *rhs,
                                   int64_t numel, int64_t elementBytes) {
  if (std::memcmp(lhs, rhs, numel * elementBytes) == 0)
    return -1;
  for (int64_t i = 0; i < numel; ++i)
    if (std::memcmp(lhs + i * elementBytes, rhs + i * elementBytes,
                    elementBytes) != 0)
      return i;
  return -1;
}

/// FNV-1a over the bytes: what ranks exchange to compare their replicas.
static uint64_t hashBytes(ArrayRef<uint8_t> bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (uint8_t byte : bytes) {
    hash ^= byte;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::optional<std::string> StepVerifier::compare(int step, bool last) {
  // A program built with overlap-param-gather ends its step with each
  // rank's shard of the update in the parameters and gathers it in the next
  // step. The comparison finishes that gather (ddprt_finish_param_sync),
  // then puts the parameters back as the step left them, so that the next
  // step still has to gather them itself.
  // A parameter stored sharded is not touched by that gather.
  ddprt_context *context = session.getContext();
  std::vector<std::vector<uint8_t>> leftByStep;
  auto restored = [&](int32_t candidate) {
    return !last && candidate >= 0 && !session.isStoredSharded(candidate);
  };
  for (const Checked &entry : checked)
    for (int32_t candidate : entry.candidates)
      if (restored(candidate))
        leftByStep.push_back(session.readParam(
            candidate, entry.numel * getRuntimeElementBytes(entry.dtype)));
  session.check(ddprt_finish_param_sync(context), "ddprt_finish_param_sync");
  std::optional<std::string> difference = compareSynced(step);
  auto left = leftByStep.begin();
  for (const Checked &entry : checked)
    for (int32_t candidate : entry.candidates) {
      if (!restored(candidate))
        continue;
      session.check(ddprt_param_write(context, candidate, left->data(),
                                      int64_t(left->size())),
                    "restoring the parameters");
      ++left;
    }
  session.check(ddprt_synchronize(context), "ddprt_synchronize");
  return difference;
}

/// "after step 2, parameter 'w' ".
static std::string describeParam(int step, StringRef name) {
  return "after step " + std::to_string(step) + ", parameter '" + name.str() +
         "' ";
}

/// How a candidate's optimizer state on one rank differs from the
/// reference's: `kind` is 0 (it does not) or DDPRT_OPTIMIZER_STATE_* + 1 (the
/// state at the parameter's `element`, whose f32 bits are `actual` and
/// `expected`).
struct ddp::StateDifference {
  enum : uint64_t { None = 0 };
  uint64_t kind = None, element = 0, actual = 0, expected = 0;
};

/// The optimizer states compared, in order: the moments first, where a
/// wrong gradient shows first (an update run twice shows there too), then
/// the main copy.
static constexpr int32_t kComparedStates[] = {DDPRT_OPTIMIZER_STATE_ADAM_M,
                                              DDPRT_OPTIMIZER_STATE_ADAM_V,
                                              DDPRT_OPTIMIZER_STATE_MAIN};

namespace {
/// The reference's optimizer states of one parameter on this rank, each
/// read at most once a step, whatever the number of candidates.
class ReferenceStates {
public:
  ReferenceStates(RuntimeSession &session, int32_t param)
      : session(session), param(param) {}
  const RuntimeSession::OptimizerState &get(size_t index) {
    if (!states[index])
      states[index] = session.readOptimizerState(param, kComparedStates[index]);
    return *states[index];
  }

private:
  RuntimeSession &session;
  int32_t param;
  std::optional<RuntimeSession::OptimizerState>
      states[std::size(kComparedStates)];
};
} // namespace

/// Compares each optimizer state the candidate keeps on this rank with the
/// reference's for the elements both keep here (all the candidate's, unless
/// the input is itself sharded by a distributed optimizer).
static StateDifference compareOptimizerStates(RuntimeSession &session,
                                              ReferenceStates &reference,
                                              int32_t candidate) {
  for (auto [index, state] : llvm::enumerate(kComparedStates)) {
    RuntimeSession::OptimizerState actual =
        session.readOptimizerState(candidate, state);
    if (actual.values.empty())
      continue;
    const RuntimeSession::OptimizerState &expected = reference.get(index);
    int64_t first = std::max(actual.begin, expected.begin);
    int64_t end = std::min(actual.begin + int64_t(actual.values.size()),
                           expected.begin + int64_t(expected.values.size()));
    for (int64_t element = first; element < end; ++element) {
      uint32_t actualBits =
          llvm::bit_cast<uint32_t>(actual.values[element - actual.begin]);
      uint32_t expectedBits =
          llvm::bit_cast<uint32_t>(expected.values[element - expected.begin]);
      if (actualBits != expectedBits)
        return {uint64_t(state) + 1, uint64_t(element), actualBits,
                expectedBits};
    }
  }
  return {};
}

/// Where each word of a rank's summary lies: per parameter, the hash of the
/// reference's value, then per candidate its hash, whether it differs from
/// the reference, and its StateDifference.
namespace {
enum SummaryWord : size_t {
  kCandidateHash,
  kCandidateDiffers,
  kStateKind,
  kStateElement,
  kStateActual,
  kStateExpected,
  kWordsPerCandidate
};
} // namespace

std::optional<std::string> StepVerifier::compareSynced(int step) {
  // Every rank summarizes what it holds in one message, so that a step costs
  // one collective: for each parameter, the hash of each program's value,
  // whether each candidate differs from the reference on this rank (compared
  // exactly), and the first difference in the optimizer state each
  // candidate keeps here. The details of a difference in values are
  // gathered only when there is one.
  size_t numCandidates = candidates.size();
  size_t wordsPerParam = 1 + kWordsPerCandidate * numCandidates;
  std::vector<uint64_t> summary;
  summary.reserve(checked.size() * wordsPerParam);
  for (const Checked &entry : checked) {
    int64_t bytes = entry.numel * getRuntimeElementBytes(entry.dtype);
    std::vector<uint8_t> reference = session.readParam(entry.reference, bytes);
    summary.push_back(hashBytes(reference));
    if (!nonFiniteNote) {
      int64_t element =
          findNonFinite(reference.data(), entry.numel,
                        getElementTypeOfRuntimeDType(entry.dtype));
      if (element >= 0)
        nonFiniteNote =
            "after step " + std::to_string(step) + " (on rank " +
            std::to_string(session.getRank()) + "), parameter '" +
            entry.description.name + "' holds " +
            formatElement(reference.data() +
                              element * getRuntimeElementBytes(entry.dtype),
                          entry.description.elementType) +
            " at " + formatIndex(element, entry.description.shape);
    }
    ReferenceStates referenceStates(session, entry.reference);
    for (int32_t candidate : entry.candidates) {
      if (candidate < 0) {
        summary.insert(summary.end(), kWordsPerCandidate, 0);
        continue;
      }
      std::vector<uint8_t> value = session.readParam(candidate, bytes);
      summary.push_back(hashBytes(value));
      summary.push_back(value != reference);
      StateDifference state =
          compareOptimizerStates(session, referenceStates, candidate);
      summary.insert(summary.end(),
                     {state.kind, state.element, state.actual, state.expected});
    }
  }
  std::vector<uint64_t> all = session.gatherFromAllRanks(summary);
  auto word = [&](int rank, size_t param, size_t index) {
    return all[rank * summary.size() + param * wordsPerParam + index];
  };
  // Candidate `candidate`'s word `index` (a SummaryWord).
  auto candidateWord = [&](int rank, size_t param, size_t candidate,
                           size_t index) {
    return word(rank, param, 1 + kWordsPerCandidate * candidate + index);
  };

  int numRanks = session.getNumRanks();
  for (auto [index, entry] : llvm::enumerate(checked)) {
    for (size_t candidate = 0; candidate < numCandidates; ++candidate)
      for (int rank = 0; rank < numRanks; ++rank)
        if (candidateWord(rank, index, candidate, kCandidateDiffers))
          return describeDifference(step, entry, candidate, rank);
    if (entry.description.replicaAxes.empty())
      continue;
    for (size_t program = 0; program <= numCandidates; ++program) {
      if (program > 0 && candidates[program - 1].partial)
        continue;
      auto hash = [&](int rank) {
        return program == 0
                   ? word(rank, index, 0)
                   : candidateWord(rank, index, program - 1, kCandidateHash);
      };
      for (int rank = 0; rank < numRanks; ++rank) {
        int leader = getReplicaLeader(rank, entry.description.replicaAxes);
        if (hash(rank) != hash(leader))
          return describeReplicaDifference(step, entry, program, leader, rank);
      }
    }
  }
  // The values are equal everywhere; a wrong gradient can still hide in the
  // optimizer's state (Adam's update hardly sees a gradient's scale).
  for (auto [index, entry] : llvm::enumerate(checked))
    for (size_t candidate = 0; candidate < numCandidates; ++candidate)
      for (int rank = 0; rank < numRanks; ++rank) {
        auto at = [&](SummaryWord which) {
          return candidateWord(rank, index, candidate, which);
        };
        StateDifference state{at(kStateKind), at(kStateElement),
                              at(kStateActual), at(kStateExpected)};
        if (state.kind != StateDifference::None)
          return describeStateDifference(step, entry, candidates[candidate],
                                         rank, state);
      }
  return std::nullopt;
}

/// "Adam first moment (m)".
static StringRef getStateName(uint64_t state) {
  switch (state) {
  case DDPRT_OPTIMIZER_STATE_MAIN:
    return "f32 main copy";
  case DDPRT_OPTIMIZER_STATE_ADAM_M:
    return "Adam first moment (m)";
  default:
    return "Adam second moment (v)";
  }
}

std::string StepVerifier::describeDifference(int step, const Checked &entry,
                                             size_t candidate, int rank) {
  const ParamDescription &param = entry.description;
  int64_t elementBytes = getRuntimeElementBytes(entry.dtype);
  int64_t offset = rank * entry.numel * elementBytes;
  int64_t bytes = entry.numel * elementBytes;
  std::vector<uint8_t> reference = session.gatherFromAllRanks(
      session.readParam(entry.reference, bytes), entry.dtype, entry.numel);
  // A rank without the parameter sends the reference's, unread.
  int32_t held = entry.candidates[candidate];
  std::vector<uint8_t> scheduled = session.gatherFromAllRanks(
      session.readParam(held >= 0 ? held : entry.reference, bytes),
      entry.dtype, entry.numel);
  const uint8_t *expected = reference.data() + offset;
  const uint8_t *actual = scheduled.data() + offset;
  int64_t element =
      findFirstDifference(expected, actual, entry.numel, elementBytes);
  int64_t at = element * elementBytes;
  return describeParam(step, param.name) + "of " + candidates[candidate].label +
         " differs from the unscheduled program's on rank " +
         std::to_string(rank) + " at " + formatIndex(element, param.shape) +
         ": " + formatElement(actual + at, param.elementType) + " vs " +
         formatElement(expected + at, param.elementType);
}

std::string StepVerifier::describeReplicaDifference(int step,
                                                    const Checked &entry,
                                                    size_t program, int leader,
                                                    int rank) {
  const ParamDescription &param = entry.description;
  int64_t elementBytes = getRuntimeElementBytes(entry.dtype);
  int64_t bytes = entry.numel * elementBytes;
  int32_t id = program == 0 ? entry.reference : entry.candidates[program - 1];
  std::vector<uint8_t> values = session.gatherFromAllRanks(
      session.readParam(id, bytes), entry.dtype, entry.numel);
  const uint8_t *expected = values.data() + leader * bytes;
  const uint8_t *actual = values.data() + rank * bytes;
  int64_t element =
      findFirstDifference(expected, actual, entry.numel, elementBytes);
  int64_t at = element * elementBytes;
  std::string label = program == 0 ? std::string("the unscheduled program")
                                   : candidates[program - 1].label;
  return describeParam(step, param.name) + "of " + label +
         " differs between rank " + std::to_string(leader) + " and rank " +
         std::to_string(rank) + " (replicas over [" +
         llvm::join(param.replicaAxes, ", ") + "]) at " +
         formatIndex(element, param.shape) + ": " +
         formatElement(expected + at, param.elementType) + " vs " +
         formatElement(actual + at, param.elementType);
}

std::string
StepVerifier::describeStateDifference(int step, const Checked &entry,
                                      const Candidate &candidate, int rank,
                                      const StateDifference &state) {
  const ParamDescription &param = entry.description;
  Type f32 = Float32Type::get(param.elementType.getContext());
  uint32_t actual = uint32_t(state.actual), expected = uint32_t(state.expected);
  return describeParam(step, param.name) + "of " + candidate.label +
         " equals the unscheduled program's, but its " +
         getStateName(state.kind - 1).str() + " differs on rank " +
         std::to_string(rank) + " at " +
         formatIndex(int64_t(state.element), param.shape) + ": " +
         formatElement(reinterpret_cast<const uint8_t *>(&actual), f32) +
         " vs " +
         formatElement(reinterpret_cast<const uint8_t *>(&expected), f32);
}
