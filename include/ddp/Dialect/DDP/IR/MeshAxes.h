//===- MeshAxes.h - What each named mesh axis is to the model ---*- C++ -*-===//
//
// One definition of the mesh axis names the importer writes and the passes,
// the simulator and ddp-run read. An axis is named for what it is to the
// dense layers (tensor- or data-parallel) and to the expert layers
// (expert-tensor-, expert- or expert-data-parallel). When the experts'
// tensor-parallel size equals the dense one, the axes are `tp`, `ep` and
// `edp`, as before; otherwise an axis can be part of two groups that differ
// (`tp_ep`: the dense layers split over it, the experts are spread over it),
// which is how Megatron's two rank generators (dense `tp-cp-dp-pp`, expert
// `tp-ep-dp-pp`, parallel_state.py L859-895) fit one row-major grid.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_DIALECT_DDP_IR_MESHAXES_H
#define DDP_DIALECT_DDP_IR_MESHAXES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace ddp {

class MeshOp;

/// What an axis is to the dense layers.
enum class DenseRole { TensorParallel, DataParallel, Other };
/// What an axis is to the expert layers; None on a dense model's axes.
enum class ExpertRole { TensorParallel, ExpertParallel, DataParallel, None };

struct AxisRoles {
  DenseRole dense;
  ExpertRole expert;
};

/// The roles of a named axis. An axis this table does not name (a
/// hand-written mesh's `x`) is data-parallel to both.
AxisRoles getAxisRoles(llvm::StringRef name);

/// The name of the axis with these roles, for a model with experts.
llvm::StringRef getExpertMeshAxisName(DenseRole dense, ExpertRole expert);

/// Whether the axis splits the model rather than replicating it: `tp`,
/// `cp`, `pp`, `etp` and the axes shared by the dense TP group (`tp_ep`,
/// `tp_edp`). ddp-overlap-tp-comm takes a collective over these alone for a
/// tensor-parallel one.
bool isModelParallelAxis(llvm::StringRef name);

/// Whether the dense layers are replicated over the axis (their
/// data-parallel group): `dp`, `edp`, `ep`, `etp`, and any axis the table
/// does not name. The data-parallel size is their product; simulating
/// another one rescales the first of them.
bool isDataParallelAxis(llvm::StringRef name);

/// The product of the sizes of `mesh`'s axes with the role, at least 1.
int64_t getTensorParallelSize(MeshOp mesh);
int64_t getExpertParallelSize(MeshOp mesh);
int64_t getExpertTensorParallelSize(MeshOp mesh);

} // namespace ddp

#endif // DDP_DIALECT_DDP_IR_MESHAXES_H
