//===- DDPTypes.td - Types of the ddp dialect --------------*- tablegen -*-===//

#ifndef DDP_TYPES_TD
#define DDP_TYPES_TD

include "ddp/Dialect/DDP/IR/DDPDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinTypes.td"

def DDP_TokenType : TypeDef<DDP_Dialect, "Token"> {
  let mnemonic = "token";
  let summary = "completion of an asynchronous collective";
  let description = [{
    Returned by every collective issued with `async`. The token must be
    consumed exactly once, by `ddp.wait` or `ddp.join`; the collective's result
    may be used only after the wait. When lowered, a token becomes a CUDA
    event (NCCL backend) or a completion handle (MPI backend).

    ```mlir
    %r, %t = ddp.all_reduce sum %g over @world[dp] async : tensor<1024xf32>
    ddp.wait %t
    ```
  }];
}

/// The element types a gradient, a parameter or an activation may have.
def DDP_FloatElement : AnyTypeOf<[F16, BF16, F32, F64]>;
/// Byte counts, offsets and sizes derived from a tensor are int64 everywhere
/// (bucketing, simulator, lowering); a tensor whose size in bytes does not
/// fit is rejected here so that none of them has to check.
def DDP_FitsInt64BytesPred
    : CPred<"::ddp::getTensorSizeInBytes($_self).has_value()">;
def DDP_Tensor : RankedTensorOf<[F16, BF16, F32, F64],
                                [HasStaticShapePred, DDP_FitsInt64BytesPred],
                                "statically shaped tensor of less than 2^63 "
                                "bytes">;
def DDP_Matrix : RankedTensorOf<[F16, BF16, F32, F64],
                                [HasStaticShapePred, HasAnyRankOfPred<[2]>,
                                 DDP_FitsInt64BytesPred],
                                "statically shaped 2-D tensor of less than "
                                "2^63 bytes">;
def DDP_FlatTensor : RankedTensorOf<[F16, BF16, F32, F64],
                                    [HasStaticShapePred, HasAnyRankOfPred<[1]>,
                                     DDP_FitsInt64BytesPred],
                                    "statically shaped 1-D tensor of less "
                                    "than 2^63 bytes">;

#endif // DDP_TYPES_TD
