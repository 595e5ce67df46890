//===- MeshAxes.cpp - What each named mesh axis is to the model -----------===//

#include "ddp/Dialect/DDP/IR/MeshAxes.h"

#include "ddp/Dialect/DDP/IR/DDPOps.h"

#include "llvm/ADT/STLExtras.h"

using namespace llvm;
using namespace ddp;

namespace {
struct NamedAxis {
  StringLiteral name;
  AxisRoles roles;
};
} // namespace

// The names in the order the importer's meshes list them, slowest first.
static constexpr NamedAxis namedAxes[] = {
    {"pp", {DenseRole::Other, ExpertRole::None}},
    {"cp", {DenseRole::Other, ExpertRole::None}},
    {"dp", {DenseRole::DataParallel, ExpertRole::DataParallel}},
    {"edp", {DenseRole::DataParallel, ExpertRole::DataParallel}},
    {"tp_edp", {DenseRole::TensorParallel, ExpertRole::DataParallel}},
    {"ep", {DenseRole::DataParallel, ExpertRole::ExpertParallel}},
    {"tp_ep", {DenseRole::TensorParallel, ExpertRole::ExpertParallel}},
    {"etp", {DenseRole::DataParallel, ExpertRole::TensorParallel}},
    {"tp", {DenseRole::TensorParallel, ExpertRole::TensorParallel}},
};

AxisRoles ddp::getAxisRoles(StringRef name) {
  for (const NamedAxis &axis : namedAxes)
    if (axis.name == name)
      return axis.roles;
  return {DenseRole::DataParallel, ExpertRole::DataParallel};
}

StringRef ddp::getExpertMeshAxisName(DenseRole dense, ExpertRole expert) {
  // `dp` is a dense model's; with experts the data-parallel axis is `edp`.
  for (const NamedAxis &axis : namedAxes)
    if (axis.roles.dense == dense && axis.roles.expert == expert &&
        axis.name != "dp")
      return axis.name;
  llvm_unreachable("no axis has these roles");
}

bool ddp::isModelParallelAxis(StringRef name) {
  AxisRoles roles = getAxisRoles(name);
  return roles.dense != DenseRole::DataParallel ||
         roles.expert == ExpertRole::TensorParallel;
}

bool ddp::isDataParallelAxis(StringRef name) {
  return getAxisRoles(name).dense == DenseRole::DataParallel;
}

template <typename Predicate>
static int64_t getRoleSize(MeshOp mesh, Predicate hasRole) {
  int64_t size = 1;
  for (auto [name, axisSize] : zip(mesh.getAxisNames(), mesh.getShape()))
    if (hasRole(getAxisRoles(cast<mlir::StringAttr>(name).getValue())))
      size *= axisSize;
  return size;
}

int64_t ddp::getTensorParallelSize(MeshOp mesh) {
  return getRoleSize(mesh, [](AxisRoles roles) {
    return roles.dense == DenseRole::TensorParallel;
  });
}

int64_t ddp::getExpertParallelSize(MeshOp mesh) {
  return getRoleSize(mesh, [](AxisRoles roles) {
    return roles.expert == ExpertRole::ExpertParallel;
  });
}

int64_t ddp::getExpertTensorParallelSize(MeshOp mesh) {
  return getRoleSize(mesh, [](AxisRoles roles) {
    return roles.expert == ExpertRole::TensorParallel;
  });
}
