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

#endif // DDP_ENUMS_TD
