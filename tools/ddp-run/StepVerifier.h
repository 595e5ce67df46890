//===- StepVerifier.h - Bitwise comparison of parameters --------*- C++ -*-===//
//
// ddp-run --verify: after every step, the scheduled program's parameters
// and the optimizer state each rank keeps must equal the unscheduled
// program's bit for bit on every rank, and every rank must hold what the
// first rank of its replica group holds.
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
  /// parameter. When no reduction feeds its update: the data-parallel axes
  /// for a dense parameter, none for an expert one.
  llvm::SmallVector<std::string> replicaAxes;
};

struct MeshDescription {
  llvm::SmallVector<std::string> axes;
  llvm::SmallVector<int64_t> shape;
};

/// The parameters of `reference` in registration order, with the axes their
/// replicas span.
llvm::SmallVector<ParamDescription> describeParams(mlir::ModuleOp reference);

/// A scheduled program compared with the unscheduled one.
struct Candidate {
  /// Its parameters are registered as `paramPrefix` + name.
  std::string paramPrefix;
  /// How messages name it: "the scheduled program", "schedule 'policy=...'".
  std::string label;
  /// Whether each rank holds only the parameters its own program uses (one
  /// pipeline rank's program each): a parameter it lacks is not compared
  /// there, and its replicas are not compared with each other (each equals
  /// the reference's, whose replicas are).
  bool partial = false;
};

/// How a candidate's optimizer state differs from the reference's on a
/// rank (StepVerifier.cpp).
struct StateDifference;

class StepVerifier {
public:
  /// Compares the parameters `params` registered by the reference program
  /// under their names with those of every candidate; without candidates
  /// only the replicas are compared.
  StepVerifier(RuntimeSession &session, llvm::ArrayRef<ParamDescription> params,
               MeshDescription mesh, llvm::ArrayRef<Candidate> candidates);

  /// Gives the candidates' parameters the reference's initial values: their
  /// names differ, and the runtime seeds a parameter from its name.
  void copyInitialValues();

  /// Compares the parameters after step `step` (counted from 1); returns the
  /// first difference, the same on every rank, or none. A candidate is
  /// compared with the reference exactly; replicas on different ranks by a
  /// 64-bit hash of the parameter (then exactly, to name the element).
  /// After the `last` step the parameters stay gathered: no step gathers
  /// them after it, and --dump-params reads them.
  std::optional<std::string> compare(int step, bool last);

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
    /// The parameter of each candidate; -1 where a partial candidate does
    /// not hold it on this rank.
    llvm::SmallVector<int32_t> candidates;
  };

  /// compare() on parameters whose gather is complete.
  std::optional<std::string> compareSynced(int step);
  /// The message for a candidate that differs from the reference on `rank`.
  std::string describeDifference(int step, const Checked &entry,
                                 size_t candidate, int rank);
  /// The message for a program (0: the reference, then the candidates) whose
  /// parameter differs between two replicas.
  std::string describeReplicaDifference(int step, const Checked &entry,
                                        size_t program, int leader, int rank);

  /// The message for a candidate whose optimizer state differs from the
  /// reference's on `rank` (its values being equal).
  std::string describeStateDifference(int step, const Checked &entry,
                                      const Candidate &candidate, int rank,
                                      const StateDifference &state);

  /// The lowest rank with the same coordinates as `rank` outside `axes`.
  int getReplicaLeader(int rank, llvm::ArrayRef<std::string> axes) const;

  RuntimeSession &session;
  MeshDescription mesh;
  llvm::SmallVector<Candidate> candidates;
  llvm::SmallVector<Checked> checked;
  std::optional<std::string> nonFiniteNote;
};

} // namespace ddp

#endif // DDP_TOOLS_DDP_RUN_STEPVERIFIER_H
