//===- DDPInterfaces.td - Interfaces of the ddp dialect ----*- tablegen -*-===//

#ifndef DDP_INTERFACES_TD
#define DDP_INTERFACES_TD

include "mlir/IR/OpBase.td"

def DDP_AsyncOpInterface : OpInterface<"AsyncOpInterface"> {
  let cppNamespace = "::ddp";
  let description = [{
    An op that runs either synchronously on the compute stream or, when it
    returns a `!ddp.token`, asynchronously on a communication stream. Passes
    that overlap communication treat every such op alike through this
    interface. An asynchronous op may be issued after other asynchronous
    ops (its dependencies) and then read their results without a wait.
  }];
  let methods = [
    InterfaceMethod<"The token, or null when the op is synchronous.",
      "::mlir::Value", "getAsyncToken", (ins), [{}],
      [{ return $_op.getToken(); }]>,
    InterfaceMethod<"Whether the op is issued asynchronously.",
      "bool", "isAsync", (ins), [{ return $_op.getAsyncToken() != nullptr; }]>,
    InterfaceMethod<[{
        The tokens of the asynchronous ops this one is issued after, on a
        communication stream and without holding the compute stream
        (`async after %t`); it consumes them.
      }],
      "::mlir::OperandRange", "getAsyncDependencies", (ins), [{}],
      [{ return $_op.getAsyncDependencies(); }]>,
  ];
}

def DDP_CollectiveOpInterface : OpInterface<"CollectiveOpInterface"> {
  let cppNamespace = "::ddp";
  let description = [{
    A communication op over a process group: the ranks that differ only in
    the coordinates of `axes` of the device mesh `mesh`.
  }];
  let methods = [
    InterfaceMethod<"The mesh the group is taken from.",
      "::mlir::FlatSymbolRefAttr", "getMeshAttr">,
    InterfaceMethod<"The mesh axes spanned by the group.",
      "::mlir::ArrayAttr", "getAxesAttr">,
    InterfaceMethod<"The tensor this rank contributes (or receives, for "
                    "recv), whose size sets the volume of the collective.",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getPayload">,
    InterfaceMethod<[{
        Which collective the op is (include/ddp/Runtime/Collectives.def):
        the cost model prices it by this kind and the runtime executes it
        as this kind. DDP_CollectiveOp declares it from its `costKind`, so
        a collective without one does not compile.
      }],
      "::ddp::CollectiveKind", "getCostKind">,
    InterfaceMethod<[{
        The tensor whose bytes the cost model charges, as nccl-tests sizes
        a collective: the payload, except the gathered result of an
        all-gather.
      }],
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getCostedTensor",
      (ins), [{}], [{ return $_op.getPayload(); }]>,
    InterfaceMethod<[{
        The elements the CPU backend converts to f32 to execute the op when
        its payload is 16-bit (runtime/cpu/CpuCollectives.cpp), which the
        runtime-memory estimate counts beside the buffers. Every collective
        states it (no default), so that a new one cannot be estimated at 0
        by omission.
      }],
      "::ddp::CheckedCount", "getWideningElements">,
    InterfaceMethod<[{
        The tensor whose element count the runtime entry point takes as
        `numel`, NCCL's count (the elements per rank): the payload, except
        the scattered result of a reduce-scatter.
      }],
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getRuntimeCountTensor",
      (ins), [{}], [{ return $_op.getPayload(); }]>,
    InterfaceMethod<[{
        The attributes the runtime entry point takes right after the group,
        in its order (a reduction, a peer offset, a root): the lowering
        passes each as an integer of the entry point's parameter type.
      }],
      "::llvm::SmallVector<::mlir::Attribute>", "getRuntimeAttributes">,
    InterfaceMethod<[{
        What the op checks once its group is known to be valid and of
        `groupSize` ranks: a scattered shape, a peer offset, a root.
        DDP_CollectiveOp's `verifySymbolUses` calls it after the group's
        own checks (detail::verifyCollectiveGroup).
      }],
      "::llvm::LogicalResult", "verifyGroupSize", (ins "int64_t":$groupSize)>,
  ];
  // The token rules every collective shares (DDPOpVerifiers.cpp), so that a
  // new collective needs no verifier of its own.
  let verify = [{ return ::ddp::detail::verifyAsyncCollective($_op); }];
}

#endif // DDP_INTERFACES_TD
