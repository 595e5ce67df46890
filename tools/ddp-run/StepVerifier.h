//===- StepVerifier.h - Bitwise comparison of parameters --------*- C++ -*-===//
//
// ddp-run --verify: after every step, the scheduled program's parameters
// must equal the unscheduled program's bit for bit on every rank, and every
// rank must hold what the first rank of its replica group holds.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_TOOLS_DDP_RUN_STEPVERIFIER_H
#define DDP_TOOLS_DDP_RUN_STEPVERIFIER_H

#include "RuntimeSession.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace ddp {

struct ParamDescription {
  std::string name;
  llvm::SmallVector<int64_t> shape;
  mlir::Type elementType;
  /// The mesh axes over which the reference program reduces the parameter's
  /// gradient: ranks that differ only in these coordinates hold the same
  /// parameter. Empty when no reduction feeds its update.
  llvm::SmallVector<std::string> replicaAxes;
};

struct MeshDescription {
  llvm::SmallVector<std::string> axes;
  llvm::SmallVector<int64_t> shape;
};

/// The parameters of `reference` in registration order, with the axes their
/// replicas span.
llvm::SmallVector<ParamDescription> describeParams(mlir::ModuleOp reference);

class StepVerifier {
public:
  /// Compares the parameters `params` registered by the reference program
  /// under their names and by the candidate under `candidatePrefix` + name;
  /// without a candidate only the replicas are compared.
  StepVerifier(RuntimeSession &session, llvm::ArrayRef<ParamDescription> params,
               MeshDescription mesh, std::optional<std::string> candidatePrefix);

  /// Gives the candidate's parameters the reference's initial values: their
  /// names differ, and the runtime seeds a parameter from its name.
  void copyInitialValues();

  /// Compares the parameters after step `step` (counted from 1); returns the
  /// first difference, the same on every rank, or none.
  std::optional<std::string> compare(int step);

  /// The first parameter that held a NaN or an Inf after some step, once
  /// compare() saw one: values grew beyond exact arithmetic, so equality no
  /// longer shows that the schedule computes the same sums.
  const std::optional<std::string> &getNonFiniteNote() const {
    return nonFiniteNote;
  }

private:
  struct Checked {
    ParamDescription description;
    int32_t dtype;
    int64_t numel;
    int32_t reference;
    std::optional<int32_t> candidate;
  };

  /// The lowest rank with the same coordinates as `rank` outside `axes`.
  int getReplicaLeader(int rank, llvm::ArrayRef<std::string> axes) const;
  void *getParamData(int32_t param) const;

  RuntimeSession &session;
  MeshDescription mesh;
  llvm::SmallVector<Checked> checked;
  std::optional<std::string> nonFiniteNote;
};

} // namespace ddp

#endif // DDP_TOOLS_DDP_RUN_STEPVERIFIER_H
