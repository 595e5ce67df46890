//===- RunPlan.h - What ddp-run runs, and its predicted time ---*- C++ -*-===//
//
// The planning half of ddp-run: the scheduled programs built from
// --scheduled, --pass-pipeline or --schedule, the plan of what runs (each
// distinct program once), the checks that they can be compared with the
// input, and the simulator's prediction of each. ddp-run.cpp lowers, runs
// and verifies what the plan holds.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_TOOLS_DDP_RUN_RUNPLAN_H
#define DDP_TOOLS_DDP_RUN_RUNPLAN_H

#include "LoweredProgram.h"
#include "StepVerifier.h"

#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Sim/Simulator.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ddp {

/// The command line's choice of what to run: at most one of
/// scheduledFile, passPipeline and scheduleOptions is given.
struct RunRequest {
  std::string inputFile;
  std::string scheduledFile;
  std::string passPipeline;
  std::vector<std::string> scheduleOptions;
  bool verify = false;
  /// --compare-speed: the unscheduled input runs beside the schedules, as
  /// under --verify, without the comparison.
  bool compareSpeed = false;
  /// Whether the unscheduled input runs beside the schedules.
  bool runsUnscheduled() const { return verify || compareSpeed; }
};

mlir::OwningOpRef<mlir::ModuleOp> parseFile(llvm::StringRef path,
                                            mlir::MLIRContext &context);

/// The one mesh of a module (the lowering reports the other cases).
MeshOp getMesh(mlir::ModuleOp module);

/// "@world(dp = 2, tp = 2)", as the IR writes it.
std::string formatMesh(MeshOp mesh);

/// One program as ddp-run runs it.
struct RunProgram {
  /// Its name in the summary: "unscheduled", "scheduled", "schedule 3".
  std::string role;
  /// How verify messages name it.
  std::string label;
  /// The schedule options it came from, if any.
  std::string options;
  /// Its parameters' names in the runtime are this + the IR's names.
  std::string paramPrefix;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  /// Whether `module` is this rank's program of a pipeline
  /// (selectPipelineStages), which holds this rank's parameters only.
  bool pipelined = false;
  std::unique_ptr<JitProgram> jit;
  std::vector<double> stepSeconds; // the slowest rank's, per step
  std::optional<sim::SimResult> prediction;
};

/// What runs: the unscheduled program (under --verify or --compare-speed, or
/// when there is no schedule) and the distinct scheduled programs, in that
/// order.
struct RunPlan {
  std::vector<RunProgram> programs;
  /// Schedules that gave the same program as an earlier one: its role, the
  /// earlier one's, its options.
  struct Duplicate {
    std::string role, sameAs, options;
  };
  std::vector<Duplicate> duplicates;
  size_t numSchedules = 0;
};

/// The scheduled programs: a file, the input after a pass pipeline, or the
/// input after ddp-schedule with each set of options.
std::vector<RunProgram> buildSchedules(mlir::ModuleOp input,
                                       mlir::MLIRContext &context,
                                       const RunRequest &request);

/// When the schedules split an axis of the input's mesh into distributed-
/// optimizer instances (`dp` into `dp_replicate` x `dp_shard`), splits it in
/// `input` too: the same groups over the two axes, with the same ranks in
/// the same order, so the unscheduled program computes what it did and
/// every program runs on the one mesh the runtime is started with. Returns
/// the label of the schedule whose split it took, if any.
std::optional<std::string> adoptSplitMesh(mlir::ModuleOp input,
                                          llvm::ArrayRef<RunProgram> schedules);

RunPlan planRun(mlir::ModuleOp input, std::vector<RunProgram> schedules,
                const RunRequest &request);

/// Fails unless every scheduled program can be compared with the input: the
/// same mesh and, under --verify, the same parameters. `splitBy`: the
/// schedule whose split of the input's mesh `mesh` is (adoptSplitMesh).
void checkComparable(MeshOp mesh, llvm::ArrayRef<ParamDescription> params,
                     llvm::ArrayRef<RunProgram> programs,
                     const RunRequest &request,
                     const std::optional<std::string> &splitBy);

/// This process's rank in the job, from the variables mpirun sets; 0 when
/// it runs alone.
int64_t getJobRank();

/// The number of processes in the job, from the variables mpirun sets;
/// none where no variable says (run alone, or a launcher that sets none).
std::optional<int64_t> getJobSize();

/// Replaces each program made of pipeline stage programs
/// (ddp-pipeline-stages) by the program of this process's pipeline rank
/// (ddp-extract-pipeline-stage): the process's rank in the job, as mpirun
/// tells it, placed on `mesh`. Every rank lowers the same groups.
void selectPipelineStages(std::vector<RunProgram> &programs, MeshOp mesh);

/// The simulator's prediction of every program on `hardwareProfile`; the
/// last one's trace goes to `predictedTracePath` when it is set.
void predictPrograms(std::vector<RunProgram> &programs,
                     llvm::StringRef hardwareProfile,
                     llvm::StringRef predictedTracePath);

} // namespace ddp

#endif // DDP_TOOLS_DDP_RUN_RUNPLAN_H
