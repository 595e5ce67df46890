//===- DDPEnums.td - Enumerations of the ddp dialect -------*- tablegen -*-===//

#ifndef DDP_ENUMS_TD
#define DDP_ENUMS_TD

include "ddp/Dialect/DDP/IR/DDPDialect.td"
include "mlir/IR/EnumAttr.td"

def DDP_GemmPhase : I32EnumAttr<"GemmPhase", "role of a GEMM in the step", [
    I32EnumAttrCase<"Fwd", 0, "fwd">,
    I32EnumAttrCase<"Dgrad", 1, "dgrad">,
    I32EnumAttrCase<"Wgrad", 2, "wgrad">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::ddp";
}
// Ops print these as a bare keyword through custom<EnumKeyword>
// (`ddp.gemm fwd`); on their own they read `#ddp.phase fwd`.
def DDP_GemmPhaseAttr : EnumAttr<DDP_Dialect, DDP_GemmPhase, "phase">;

def DDP_Reduction : I32EnumAttr<"Reduction", "reduction of a collective", [
    I32EnumAttrCase<"Sum", 0, "sum">,
    I32EnumAttrCase<"Avg", 1, "avg">,
    I32EnumAttrCase<"Max", 2, "max">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::ddp";
}
def DDP_ReductionAttr : EnumAttr<DDP_Dialect, DDP_Reduction, "reduction">;

// The routing kernels a ddp.compute of a mixture-of-experts layer may name
// (`routing`): the runtime computes them for real (ddprt_route; the values
// are its DDPRT_ROUTE_*).
def DDP_RoutingKernel : I32EnumAttr<"RoutingKernel", "a routing kernel", [
    I32EnumAttrCase<"Select", 0, "select">,
    I32EnumAttrCase<"SelectGrad", 1, "select_grad">,
    I32EnumAttrCase<"Gather", 2, "gather">,
    I32EnumAttrCase<"Combine", 3, "combine">,
    I32EnumAttrCase<"SortChunks", 4, "sort_chunks">,
    I32EnumAttrCase<"UnsortChunks", 5, "unsort_chunks">,
    I32EnumAttrCase<"Count", 6, "count">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::ddp";
}
def DDP_RoutingKernelAttr : EnumAttr<DDP_Dialect, DDP_RoutingKernel, "routing">;

// The `policy` option of ddp-assign-buckets and ddp-schedule, and the `name`
// of the `#ddp.bucket_policy` that records which one laid the buckets out.
def DDP_BucketPolicy : I32EnumAttr<"BucketPolicy", "bucket layout policy", [
    I32EnumAttrCase<"Megatron", 0, "megatron">,
    I32EnumAttrCase<"PyTorch", 1, "pytorch">,
    I32EnumAttrCase<"Size", 2, "size">,
    I32EnumAttrCase<"Auto", 3, "auto">,
    I32EnumAttrCase<"Unit", 4, "unit">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::ddp";
}

#endif // DDP_ENUMS_TD
