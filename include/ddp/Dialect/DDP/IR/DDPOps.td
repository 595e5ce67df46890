//===- DDPOps.td - Operations of the ddp dialect -----------*- tablegen -*-===//
//
// One file for all ops of the dialect, as upstream keeps each dialect's ops
// (GPUOps.td is several times longer): ODS generates the op classes and the
// dialect reference from it in one piece, and the ops are grouped below by
// family (program, compute, collectives, buckets, optimizer). It is over 600
// lines because it holds each op's full description, which is the dialect's
// documentation (docs/Dialects/DDP.md is generated from it).
//
//===----------------------------------------------------------------------===//

#ifndef DDP_OPS_TD
#define DDP_OPS_TD

include "ddp/Dialect/DDP/IR/DDPDialect.td"
include "ddp/Dialect/DDP/IR/DDPEnums.td"
include "ddp/Dialect/DDP/IR/DDPInterfaces.td"
include "ddp/Dialect/DDP/IR/DDPTypes.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Side effects: what keeps the issue order
//===----------------------------------------------------------------------===//

// Block order is issue order on the compute stream, so an op issued there
// reads and writes the stream: no generic pass (CSE, DCE, motion) may merge,
// drop or reorder it. See "Issue order in the IR" in docs/RationaleDDP.md.
def DDP_ComputeStream : Resource<"::ddp::ComputeStreamResource">;
// The parameters' values: read by ddp.get_param, written by the optimizer.
def DDP_ParamState : Resource<"::ddp::ParamStateResource">;

defvar DDP_OnComputeStream = MemoryEffects<[MemRead<DDP_ComputeStream>,
                                            MemWrite<DDP_ComputeStream>]>;

//===----------------------------------------------------------------------===//
// Device mesh and parameters
//===----------------------------------------------------------------------===//

def DDP_MeshOp : DDP_Op<"mesh", [Symbol, HasParent<"mlir::ModuleOp">]> {
  let summary = "the device mesh whose axes name the process groups";
  let description = [{
    Declares the ranks of the job as a mesh with named axes; the product of
    the axis sizes is the number of ranks. A process group is a subset of the
    axes: the ranks that share all other coordinates. The first axis varies
    slowest, so with `(dp = 4, tp = 8)` the 8 ranks of a tensor-parallel
    group are consecutive, as Megatron lays them out on a node.

    ```mlir
    ddp.mesh @world(dp = 4, tp = 8)
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$axis_names,
                       DenseI64ArrayAttr:$shape);
  let assemblyFormat = [{
    $sym_name `` custom<MeshAxes>($axis_names, $shape) attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The size of the axis named `axis`, or -1 when the mesh has none.
    int64_t getAxisSize(llvm::StringRef axis);
    /// The number of ranks in the whole mesh.
    int64_t getNumRanks();
  }];
}

def DDP_ParamOp : DDP_Op<"param", [Symbol, HasParent<"mlir::ModuleOp">]> {
  let summary = "a trainable parameter of the model";
  let description = [{
    A parameter as this rank holds it (its tensor-parallel shard, if split).
    `layer` is the transformer layer it belongs to; `expert` marks a
    mixture-of-experts parameter (reduced over the expert-data-parallel
    group, never bucketed with dense ones); `shared_embedding` marks the word
    embedding shared with the output layer; `tp_dim` is the dimension split
    across tensor-parallel ranks (absent when replicated).

    Declaration order is the model's registration order (as PyTorch's
    `named_parameters()` yields it); bucketing policies depend on it.

    ```mlir
    ddp.param @layers.0.mlp.fc1.weight layer 0 tp_dim 0 : tensor<2048x1024xbf16>
    ddp.param @embedding.word_embeddings.weight shared_embedding : tensor<6400x1024xbf16>
    ddp.param @layers.0.mlp.experts.0.fc1.weight layer 0 expert : tensor<512x1024xbf16>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, TypeAttrOf<DDP_Tensor>:$type,
                       OptionalAttr<I64Attr>:$layer,
                       OptionalAttr<I64Attr>:$tp_dim,
                       UnitAttr:$expert, UnitAttr:$shared_embedding);
  let assemblyFormat = [{
    $sym_name (`layer` $layer^)? (`tp_dim` $tp_dim^)? (`expert` $expert^)?
    (`shared_embedding` $shared_embedding^)? `:` $type attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    mlir::RankedTensorType getTensorType() {
      return mlir::cast<mlir::RankedTensorType>(getType());
    }
  }];
}

/// Ops that name a ddp.param and must agree with its shape.
class DDP_ParamUserOp<string mnemonic, list<Trait> traits = []>
    : DDP_Op<mnemonic, !listconcat(traits,
          [DeclareOpInterfaceMethods<SymbolUserOpInterface>])>;

def DDP_GetParamOp : DDP_ParamUserOp<"get_param",
    [MemoryEffects<[MemRead<DDP_ParamState>]>]> {
  let summary = "the current value of a parameter";
  let description = [{
    Reads the parameter's value at this point of the step: the value the
    step started with, until an optimizer op of the step updates it.

    ```mlir
    %w = ddp.get_param @fc1.weight : tensor<64x32xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$param);
  let results = (outs DDP_Tensor:$result);
  let assemblyFormat = "$param attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Compute
//===----------------------------------------------------------------------===//

def DDP_GemmOp : DDP_Op<"gemm", [DDP_OnComputeStream]> {
  let summary = "a matrix product: one forward, dgrad or wgrad GEMM";
  let description = [{
    `result = op(lhs) * op(rhs)`, where `op` transposes the operand marked
    `transposed`. M, N and K come from the types; the cost model charges
    `2*M*N*K` flops. `phase` says which pass of a linear layer it is, `layer`
    which transformer layer. For `Y = X W`: the forward is `X * W`, the dgrad
    `dY * W^T`, the wgrad `X^T * dY`.

    ```mlir
    %y  = ddp.gemm fwd %x, %w layer 0 : tensor<32x64xf32>, tensor<64x16xf32> -> tensor<32x16xf32>
    %dx = ddp.gemm dgrad %dy, %w transposed layer 0 : tensor<32x16xf32>, tensor<64x16xf32> -> tensor<32x64xf32>
    %dw = ddp.gemm wgrad %x transposed, %dy layer 0 : tensor<32x64xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
    ```
  }];
  let arguments = (ins DDP_GemmPhaseAttr:$phase, DDP_Matrix:$lhs,
                       UnitAttr:$transpose_lhs, DDP_Matrix:$rhs,
                       UnitAttr:$transpose_rhs, OptionalAttr<I64Attr>:$layer);
  let results = (outs DDP_Matrix:$result);
  let assemblyFormat = [{
    custom<EnumKeyword>($phase) $lhs (`transposed` $transpose_lhs^)? `,` $rhs
    (`transposed` $transpose_rhs^)? (`layer` $layer^)? attr-dict `:`
    type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getM();
    int64_t getN();
    int64_t getK();
    /// 2*M*N*K.
    double getFlops() { return 2.0 * getM() * getN() * getK(); }
  }];
}

def DDP_ComputeOp : DDP_Op<"compute", [DDP_OnComputeStream]> {
  let summary = "a kernel the compiler does not model, with its cost";
  let description = [{
    Attention, a norm, softmax, an activation, a router: any kernel that is
    not a GEMM. `kind` names it for reports and traces; `flops` and `bytes`
    (moved to and from HBM) are what the cost model charges for it.

    When the step is executed, the runtime runs a deterministic stand-in
    (each result element is the sum of the operands' elements at the same
    flat index, taken modulo each operand's size), so that the dataflow is
    kept and the scheduled and unscheduled programs can be compared bitwise.

    ```mlir
    %o = ddp.compute "attention"(%q, %k, %v) flops 1.3e9 bytes 2.0e6 layer 0
        : (tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>) -> tensor<128x64xbf16>
    ```

    A kernel of a mixture-of-experts layer that decides where rows go names
    its `routing` kernel instead, with its integer `params`; the runtime
    computes it for real (ddprt_route), so that a schedule is checked
    against routing that depends on the data. Maps (row indices, -1 for
    none) are f32 vectors, exact below 2^24 rows.

    | routing | params | inputs | results |
    |---|---|---|---|
    | `select` | topk, capacity | logits T x E | slot probabilities (E*C), slot rows (E*C), token slots (T*k) |
    | `select_grad` | topk | slot probabilities' gradient (S), logits T x E, token slots (T*k) | logits' gradient T x E |
    | `gather` | | rows N x H, map (S) | S x H |
    | `combine` | topk | rows S x H, token slots (T*k) | T x H |
    | `sort_chunks` | ranks, capacity | n tensors of ranks*L*capacity rows | n*L tensors of ranks*capacity rows |
    | `unsort_chunks` | ranks, capacity | n*L tensors | n tensors |
    | `count` | capacity | slot rows (E*C) | rows per expert (E) |

    `select` is Megatron-Core's default TopKRouter: each token's top k
    logits (ties to the lower expert), a softmax over them, and each expert
    keeps its `capacity` most probable tokens (the "probs" drop policy), in
    token order.

    ```mlir
    %probs, %rows, %slots = ddp.compute "moe_route"(%logits) routing select
        params [2, 8] flops 0.0 bytes 1.0e3
        : (tensor<16x4xf32>) -> (tensor<32xf32>, tensor<32xf32>, tensor<32xf32>)
    ```
  }];
  let arguments = (ins StrAttr:$kind, Variadic<DDP_Tensor>:$inputs,
                       OptionalAttr<DDP_RoutingKernelAttr>:$routing,
                       OptionalAttr<DenseI64ArrayAttr>:$params,
                       F64Attr:$flops, F64Attr:$bytes,
                       OptionalAttr<I64Attr>:$layer);
  let results = (outs Variadic<DDP_Tensor>:$results);
  let assemblyFormat = [{
    $kind `(` $inputs `)` (`routing` custom<EnumKeyword>($routing)^)? (`params` $params^)?
    `flops` custom<Real>($flops) `bytes` custom<Real>($bytes) (`layer` $layer^)?
    attr-dict `:` functional-type($inputs, $results)
  }];
  let hasVerifier = 1;
}

def DDP_AccumulateOp : DDP_Op<"accumulate",
    [DDP_OnComputeStream, SameOperandsAndResultType]> {
  let summary = "elementwise sum: gradient accumulation over microbatches";
  let description = [{
    ```mlir
    %acc1 = ddp.accumulate %acc0, %dw1 : tensor<64x16xf32>
    ```
  }];
  let arguments = (ins DDP_Tensor:$lhs, DDP_Tensor:$rhs);
  let results = (outs DDP_Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def DDP_ScaleOp : DDP_Op<"scale",
    [DDP_OnComputeStream, SameOperandsAndResultType]> {
  let summary = "multiply every element by a constant";
  let description = [{
    Pre-scales gradients by `1/dp` before a summing collective (Megatron's
    default when the average is not taken in the collective).

    ```mlir
    %s = ddp.scale %g by 0.125 : tensor<4096xbf16>
    ```
  }];
  let arguments = (ins DDP_Tensor:$input, F64Attr:$factor);
  let results = (outs DDP_Tensor:$result);
  let assemblyFormat = "$input `by` custom<Real>($factor) attr-dict `:` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def DDP_CastOp : DDP_Op<"cast", [DDP_OnComputeStream]> {
  let summary = "convert the element type, keeping the shape";
  let description = [{
    Rounds to nearest even when narrowing. Used to reduce 16-bit gradients
    in fp32 buffers (`grad_reduce_in_fp32`).

    ```mlir
    %w = ddp.cast %g : tensor<4096xbf16> to tensor<4096xf32>
    ```
  }];
  let arguments = (ins DDP_Tensor:$input);
  let results = (outs DDP_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def DDP_GradReadyOp : DDP_ParamUserOp<"grad_ready",
    [DDP_OnComputeStream, AllTypesMatch<["grad", "result"]>]> {
  let summary = "the gradient of a parameter is final on this rank";
  let description = [{
    Marks the point of the step after which the gradient of `param` no
    longer changes on this rank: after its wgrad in the last microbatch. It
    returns its operand unchanged; the data-parallel reduction of a gradient
    starts from this result. Each parameter has at most one `grad_ready`.
    The gradient has the parameter's shape; its element type is the gradient
    dtype, which may differ from the parameter's.

    ```mlir
    %g = ddp.grad_ready @fc1.weight, %dw : tensor<64x16xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$param, DDP_Tensor:$grad);
  let results = (outs DDP_Tensor:$result);
  let assemblyFormat = "$param `,` $grad attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// Collectives share their process group (mesh + axes), an optional token
/// (present when the collective is issued asynchronously) and the tokens of
/// the asynchronous ops it is issued after (`async after %t`).
///
/// `costKind` is the op's enumerator of ddp::CollectiveKind
/// (include/ddp/Runtime/Collectives.def), by which the cost model prices it,
/// the runtime executes it and the lowering calls the entry point of that
/// name: every collective must name one, so that a new collective cannot
/// reach the simulator unpriced. `widening` is the body of
/// getWideningElements (CollectiveOpInterface): what the CPU backend
/// converts to f32 for a 16-bit payload, which no collective may leave out.
///
/// What else differs between collectives is a field a def may set, so that
/// a new collective is written here and needs no C++ of its own in the
/// dialect or the lowering (docs/Extending.md): the interface verifies the
/// tokens, verifySymbolUses the group, then `groupSizeCheck`.
class DDP_CollectiveOp<string mnemonic, string costKind, string widening,
                       list<Trait> traits = []>
    : DDP_Op<mnemonic, !listconcat(traits, [
          DDP_OnComputeStream,
          DeclareOpInterfaceMethods<SymbolUserOpInterface>,
          DDP_AsyncOpInterface, DDP_CollectiveOpInterface])> {
  dag commonArgs = (ins FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes,
                        Variadic<DDP_TokenType>:$asyncDependencies);
  // What this rank sends; recv sets it to what it receives.
  code payload = "getInput()";
  // The tensor the cost model charges and the runtime's count, when not the
  // payload (CollectiveOpInterface's getCostedTensor and
  // getRuntimeCountTensor).
  code costedTensor = "";
  code runtimeCountTensor = "";
  // The attributes the runtime entry point takes after the group.
  code runtimeAttributes = "";
  // The body of verifyGroupSize(int64_t groupSize).
  code groupSizeCheck = "return ::mlir::success();";
  // More declarations of the op's own.
  code moreDeclarations = "";
  let extraClassDeclaration =
      "static ::ddp::CollectiveKind getCostKind() { "
      "return ::ddp::CollectiveKind::" # costKind # "; }\n"
      "::ddp::CheckedCount getWideningElements() { " # widening # " }\n"
      "::mlir::TypedValue<::mlir::RankedTensorType> getPayload() { return " #
      payload # "; }\n" #
      !if(!empty(costedTensor), "",
          "::mlir::TypedValue<::mlir::RankedTensorType> getCostedTensor() { "
          "return " # costedTensor # "; }\n") #
      !if(!empty(runtimeCountTensor), "",
          "::mlir::TypedValue<::mlir::RankedTensorType> "
          "getRuntimeCountTensor() { return " # runtimeCountTensor # "; }\n") #
      "::llvm::SmallVector<::mlir::Attribute> getRuntimeAttributes() { "
      "return {" # runtimeAttributes # "}; }\n"
      "::llvm::LogicalResult verifyGroupSize(int64_t groupSize) { " #
      groupSizeCheck # " }\n" # moreDeclarations;
  let extraClassDefinition = [{
    ::llvm::LogicalResult
    $cppClass::verifySymbolUses(::mlir::SymbolTableCollection &symbolTable) {
      return ::ddp::detail::verifyCollectiveGroup(*this, symbolTable);
    }
  }];
}

def DDP_AllReduceOp : DDP_CollectiveOp<"all_reduce", "AllReduce",
    "return getInput().getType().getNumElements();",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "reduce a tensor over a process group, result on every rank";
  let description = [{
    Every rank of the group ends with the elementwise `sum`, average (`avg`)
    or maximum (`max`, e.g. the max logit of a vocabulary-parallel
    cross-entropy) of the group's inputs. With `async` it also returns a token and
    runs on a communication stream.

    `async after %t, ...` (every collective has it) issues the collective on
    a communication stream once the asynchronous ops of the listed tokens
    are done, without holding the compute stream: it may read their
    results, and it consumes their tokens, so that waiting its own token
    covers them too. Megatron's distributed optimizer with several
    instances all-reduces each bucket's shard across the instances so,
    right after the reduce-scatter that produces it.

    `avg` over `n` ranks is a pre-multiplied sum, as NCCL's `ncclAvg` for
    floating point: each input is first scaled by `1/n` exactly as
    `ddp.scale` scales it, then the results are summed. So `avg` equals
    `ddp.scale` by `1/n` followed by `sum`, bitwise, for every `n`.

    ```mlir
    %r = ddp.all_reduce sum %g over @world[dp] : tensor<4096xf32>
    %a, %t = ddp.all_reduce avg %b over @world[dp] async : tensor<8192xbf16>
    ddp.wait %t
    %s, %t0 = ddp.reduce_scatter sum %g over @world[dp_shard] async : tensor<8192xf32> -> tensor<4096xf32>
    %r, %t1 = ddp.all_reduce sum %s over @world[dp_replicate] async after %t0 : tensor<4096xf32>
    ddp.wait %t1
    ```
  }];
  let arguments = !con((ins DDP_ReductionAttr:$reduction, DDP_Tensor:$input),
                       commonArgs);
  let results = (outs DDP_Tensor:$result, Optional<DDP_TokenType>:$token);
  let assemblyFormat = [{
    custom<EnumKeyword>($reduction) $input `over` custom<Group>($mesh, $axes)
    `` custom<AsyncToken>(type($token), $asyncDependencies) attr-dict `:` type($result)
  }];
  let runtimeAttributes = "getReductionAttr()";
}

def DDP_ReduceScatterOp : DDP_CollectiveOp<"reduce_scatter", "ReduceScatter",
    "return ::ddp::CheckedCount(getInput().getType().getNumElements()) + "
    "getResult().getType().getNumElements();"> {
  let summary = "reduce over a group and keep this rank's slice of dim 0";
  let description = [{
    Rank `i` of an `n`-rank group ends with slice `i` of the reduced tensor
    along dimension 0, which must be divisible by `n`. `avg` is the
    pre-multiplied sum of `ddp.all_reduce`.

    ```mlir
    %s = ddp.reduce_scatter sum %b over @world[dp] : tensor<8192xf32> -> tensor<1024xf32>
    ```
  }];
  let arguments = !con((ins DDP_ReductionAttr:$reduction, DDP_Tensor:$input),
                       commonArgs);
  let results = (outs DDP_Tensor:$result, Optional<DDP_TokenType>:$token);
  let assemblyFormat = [{
    custom<EnumKeyword>($reduction) $input `over` custom<Group>($mesh, $axes)
    `` custom<AsyncToken>(type($token), $asyncDependencies) attr-dict `:` type($input) `->`
    type($result)
  }];
  let runtimeCountTensor = "getResult()";
  let runtimeAttributes = "getReductionAttr()";
  let groupSizeCheck = [{
    return ::ddp::detail::verifyScatteredShape(
        *this, getInput().getType(), getResult().getType(), groupSize);
  }];
}

def DDP_AllGatherOp : DDP_CollectiveOp<"all_gather", "AllGather",
    "return getResult().getType().getNumElements();"> {
  let summary = "concatenate every rank's tensor along dim 0";
  let description = [{
    ```mlir
    %w, %t = ddp.all_gather %shard over @world[dp] async : tensor<1024xbf16> -> tensor<8192xbf16>
    ddp.wait %t
    ```
  }];
  let arguments = !con((ins DDP_Tensor:$input), commonArgs);
  let results = (outs DDP_Tensor:$result, Optional<DDP_TokenType>:$token);
  let assemblyFormat = [{
    $input `over` custom<Group>($mesh, $axes)
    `` custom<AsyncToken>(type($token), $asyncDependencies) attr-dict `:` type($input) `->`
    type($result)
  }];
  // NCCL's bus bandwidth of an all-gather is counted on the gathered size.
  let costedTensor = "getResult()";
  let groupSizeCheck = [{
    return ::ddp::detail::verifyScatteredShape(
        *this, getResult().getType(), getInput().getType(), groupSize);
  }];
}

def DDP_SendOp : DDP_CollectiveOp<"send", "Send", "return 0;"> {
  let summary = "send a tensor to the rank `offset` places further in a group";
  let description = [{
    Rank `i` of an `n`-rank group sends to rank `(i + offset) mod n`. Offsets
    are relative so that the program stays the same on every rank; a ring
    exchange is a `send` with offset `1` and a `recv` with offset `-1`.

    ```mlir
    ddp.send %chunk to 1 over @world[tp] : tensor<256x64xbf16>
    ```
  }];
  let arguments = !con((ins DDP_Tensor:$input, I64Attr:$offset), commonArgs);
  let results = (outs Optional<DDP_TokenType>:$token);
  let assemblyFormat = [{
    $input `to` $offset `over` custom<Group>($mesh, $axes)
    `` custom<AsyncToken>(type($token), $asyncDependencies) attr-dict `:` type($input)
  }];
  let runtimeAttributes = "getOffsetAttr()";
  let groupSizeCheck = [{
    return ::ddp::detail::verifyPeerOffset(*this, getOffset(), groupSize);
  }];
}

def DDP_RecvOp : DDP_CollectiveOp<"recv", "Recv", "return 0;"> {
  let summary = "receive a tensor from the rank `offset` places away in a group";
  let description = [{
    Rank `i` of an `n`-rank group receives from rank `(i + offset) mod n`.

    ```mlir
    %c, %t = ddp.recv from -1 over @world[tp] async : tensor<256x64xbf16>
    ddp.wait %t
    ```
  }];
  let arguments = !con((ins I64Attr:$offset), commonArgs);
  let results = (outs DDP_Tensor:$result, Optional<DDP_TokenType>:$token);
  let assemblyFormat = [{
    `from` $offset `over` custom<Group>($mesh, $axes)
    `` custom<AsyncToken>(type($token), $asyncDependencies) attr-dict `:` type($result)
  }];
  let payload = "getResult()";
  let runtimeAttributes = "getOffsetAttr()";
  let groupSizeCheck = [{
    return ::ddp::detail::verifyPeerOffset(*this, getOffset(), groupSize);
  }];
}

def DDP_BroadcastOp : DDP_CollectiveOp<"broadcast", "Broadcast", "return 0;",
                                        [AllTypesMatch<["input", "result"]>]> {
  let summary = "copy one rank's tensor to every rank of a group";
  let description = [{
    Every rank of the group ends with the input of group rank `root`; the
    other ranks' inputs are not read. Megatron broadcasts a microbatch's
    data over the tensor-parallel group, and a checkpoint loader the
    parameters that one rank read. The bytes are copied as they are, so the
    result is the root's input bitwise on every rank.

    ```mlir
    %b = ddp.broadcast %x root 0 over @world[tp] : tensor<4096xbf16>
    %c, %t = ddp.broadcast %y root 2 over @world[dp] async : tensor<16x64xf32>
    ddp.wait %t
    ```
  }];
  let arguments = !con((ins DDP_Tensor:$input,
                            ConfinedAttr<I64Attr, [IntNonNegative]>:$root),
                       commonArgs);
  let results = (outs DDP_Tensor:$result, Optional<DDP_TokenType>:$token);
  let assemblyFormat = [{
    $input `root` $root `over` custom<Group>($mesh, $axes)
    `` custom<AsyncToken>(type($token), $asyncDependencies) attr-dict `:` type($result)
  }];
  let runtimeAttributes = "getRootAttr()";
  let groupSizeCheck = [{
    return ::ddp::detail::verifyBroadcastRoot(*this, getRoot(), groupSize);
  }];
}

def DDP_AllToAllOp : DDP_CollectiveOp<"all_to_all", "AllToAll", "return 0;",
                                       [AllTypesMatch<["input", "result"]>]> {
  let summary = "exchange equal blocks of dim 0 between every pair of ranks";
  let description = [{
    The input's dimension 0 is cut into as many equal blocks as the group
    has ranks. Rank `i` sends its block `j` to rank `j`. That block becomes
    block `i` of rank `j`'s result. Megatron's all-to-all token dispatcher
    sends each expert-parallel rank the tokens routed to its experts this
    way, and sends the experts' outputs back the same way. With a capacity
    factor (or padding to capacity), every block has the same size. The bytes
    are only moved, so the result is bitwise the senders' blocks.

    ```mlir
    %d = ddp.all_to_all %tokens over @world[ep] : tensor<4096x4096xbf16>
    %e, %t = ddp.all_to_all %x over @world[ep] async : tensor<512x64xf32>
    ddp.wait %t
    ```
  }];
  let arguments = !con((ins DDP_Tensor:$input), commonArgs);
  let results = (outs DDP_Tensor:$result, Optional<DDP_TokenType>:$token);
  let assemblyFormat = [{
    $input `over` custom<Group>($mesh, $axes)
    `` custom<AsyncToken>(type($token), $asyncDependencies) attr-dict `:` type($result)
  }];
  let groupSizeCheck = [{
    return ::ddp::detail::verifyAllToAllBlocks(*this, getInput().getType(),
                                               groupSize);
  }];
}

def DDP_AllToAllVOp : DDP_CollectiveOp<"all_to_all_v", "AllToAllV", "return 0;",
                                        [AllTypesMatch<["input", "result"]>,
                                         AllTypesMatch<["sendCounts",
                                                        "recvCounts"]>]> {
  let summary = "an all-to-all that moves only each sub-block's counted rows";
  let description = [{
    The all-to-all of `ddp.all_to_all`, with the tokens' routing: each of
    the input's `n` blocks is cut into as many equal sub-blocks as the
    counts have per rank (`counts = n x s` elements; a token dispatcher's
    sub-block is one local expert's buffer). From sub-block `k` of block `j`
    the first `send_counts[j*s + k]` rows go to rank `j`; they arrive at the
    start of sub-block `k` of block `i` (the sender's) there, where
    `recv_counts[i*s + k]` says how many. Rows past a sub-block's count are
    zero in the result.

    Megatron's all-to-all token dispatcher moves tokens this way
    (`token_dispatcher.py`, `MoEAlltoAllTokenDispatcher`: `input_splits`,
    and the `output_splits` an all-to-all of the counts gives), and so does
    `MPI_Alltoallv`. Counts are f32 whole numbers of rows (`count` routing
    kernels make them; an all-to-all of one rank's send counts gives its
    peers' receive counts), and they must agree between ranks, which only
    the data can show: a rank expecting fewer rows than its peer sends gets
    an MPI error (truncation) or a hang (NCCL), one expecting more gets
    wrong rows. When every sender's rows past its counts are
    zero, the result is bitwise that of `ddp.all_to_all` on the same
    buffers, with fewer bytes moved. The cost model prices the rows the
    buffer holds (`ddp.routed_fill` scales them), as for `ddp.all_to_all`.

    ```mlir
    %r = ddp.all_to_all_v %tokens counts %send, %recv over @world[ep]
        : tensor<64x16xbf16>, tensor<8xf32>
    ```
  }];
  let arguments = !con((ins DDP_Tensor:$input, DDP_Tensor:$sendCounts,
                            DDP_Tensor:$recvCounts),
                       commonArgs);
  let results = (outs DDP_Tensor:$result, Optional<DDP_TokenType>:$token);
  let assemblyFormat = [{
    $input `counts` $sendCounts `,` $recvCounts `over` custom<Group>($mesh, $axes)
    `` custom<AsyncToken>(type($token), $asyncDependencies) attr-dict `:`
    type($result) `,` type($sendCounts)
  }];
  // ddprt_all_to_all_v's sub_blocks and row_numel.
  let runtimeAttributes = [{
    ::mlir::IntegerAttr::get(::mlir::IntegerType::get(getContext(), 64),
                             getNumSubBlocks()),
    ::mlir::IntegerAttr::get(::mlir::IntegerType::get(getContext(), 64),
                             getRowNumel())
  }];
  let groupSizeCheck = [{
    return ::ddp::detail::verifyCountedAllToAll(
        *this, getInput().getType(), getSendCounts().getType(), groupSize);
  }];
  let moreDeclarations = [{
    /// The sub-blocks per rank: the counts over the group's ranks, once the
    /// verifier has checked the group.
    int64_t getNumSubBlocks();
    /// The elements of one row (dimension 0 is the rows).
    int64_t getRowNumel();
  }];
}

def DDP_WaitOp : DDP_Op<"wait", [DDP_OnComputeStream]> {
  let summary = "block the compute stream until an asynchronous op is done";
  let description = [{
    After the wait, the results of the op that produced the token (or of all
    the ops joined into it) may be used.

    ```mlir
    ddp.wait %t
    ```
  }];
  let arguments = (ins DDP_TokenType:$token);
  let assemblyFormat = "$token attr-dict";
  let hasVerifier = 1;
}

def DDP_JoinOp : DDP_Op<"join", [Pure]> {
  let summary = "a token that completes when all its operands have";
  let description = [{
    ```mlir
    %all = ddp.join %t0, %t1, %t2
    ddp.wait %all
    ```
  }];
  let arguments = (ins Variadic<DDP_TokenType>:$tokens);
  let results = (outs DDP_TokenType:$result);
  let assemblyFormat = "$tokens attr-dict";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Row chunks: the pieces of a GEMM split along M
//===----------------------------------------------------------------------===//

def DDP_ChunkOp : DDP_Op<"chunk", [MemoryEffects<[MemRead<DDP_ComputeStream>]>]> {
  let summary = "chunk `index` of `count` equal row chunks of a tensor";
  let description = [{
    Splits dimension 0 (the rows; for activations, the tokens) of `input`
    into `interleave` equal blocks, each block into `count` equal chunks,
    and returns chunk `index` of every block, stacked. With `interleave` 1
    (the default) that is rows `[index * M / count, (index + 1) * M /
    count)`.

    With `interleave` equal to the size of a process group, chunk `index`
    holds rows `[r * M / n + index * m, r * M / n + (index + 1) * m)` of
    every block `r`, `m = M / (n * count)`: the rows that a reduce-scatter
    of the chunk over that group hands rank `r`, so that reduce-scattering
    the chunks one by one and concatenating what each rank receives is the
    reduce-scatter of the whole tensor (ddp-overlap-tp-comm's pipeline).

    When lowered, a chunk is a view of its input, never a copy: a
    contiguous range of rows, or, interleaved, one range per block that the
    GEMM reading it multiplies block by block.

    ```mlir
    %c1 = ddp.chunk %x[1 of 4] : tensor<2048x1536xbf16> -> tensor<512x1536xbf16>
    %r1 = ddp.chunk %x[1 of 4] interleave 8 : tensor<2048x1536xbf16> -> tensor<512x1536xbf16>
    ```
  }];
  let arguments = (ins DDP_Tensor:$input, I64Attr:$index, I64Attr:$count,
                       DefaultValuedAttr<I64Attr, "1">:$interleave);
  let results = (outs DDP_Tensor:$result);
  let assemblyFormat = [{
    $input `[` $index `of` $count `]` (`interleave` $interleave^)? attr-dict
    `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def DDP_ConcatOp : DDP_Op<"concat", [DDP_OnComputeStream]> {
  let summary = "stack tensors along dimension 0";
  let description = [{
    The result's rows are the rows of the operands, in operand order. The
    operands share the element type and every dimension but the first. When
    lowered, each operand is produced in place in the result's buffer, so
    concatenating copies nothing (as `ddp.bucket_pack`).

    With `interleave` n, the inverse of `ddp.chunk ... interleave n`: each
    operand is split into n equal blocks of rows, and block r of the result
    is block r of every operand, in operand order. Concatenating what the
    GEMM chunks of an all-gathered input produce (ddp-overlap-tp-comm's
    pipelined all-gather: each chunk holds a slice of every rank's rows)
    gives the product of the whole gathered input.

    ```mlir
    %y = ddp.concat %s0, %s1 : tensor<64x12288xbf16>, tensor<64x12288xbf16> -> tensor<128x12288xbf16>
    %z = ddp.concat %g0, %g1 interleave 8 : tensor<64x4096xbf16>, tensor<64x4096xbf16> -> tensor<128x4096xbf16>
    ```
  }];
  let arguments = (ins Variadic<DDP_Tensor>:$inputs,
                       DefaultValuedAttr<I64Attr, "1">:$interleave);
  let results = (outs DDP_Tensor:$result);
  let assemblyFormat = [{
    $inputs (`interleave` $interleave^)? attr-dict `:` type($inputs) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gradient buckets
//===----------------------------------------------------------------------===//

def DDP_BucketPackOp : DDP_Op<"bucket_pack", [DDP_OnComputeStream]> {
  let summary = "lay several gradients out in one flat bucket";
  let description = [{
    Operand `i` (flattened, row-major) occupies elements
    `[offsets[i], offsets[i] + numel_i)` of the result; elements covered by
    no operand (padding) are zero. The gradients must not overlap and must
    share the bucket's element type. When lowered, the gradients are
    computed in place inside the bucket's buffer, so packing copies nothing.

    ```mlir
    %b = ddp.bucket_pack %g1, %g0 offsets [0, 1024]
        : tensor<64x16xf32>, tensor<16x64xf32> -> tensor<2048xf32>
    ```
  }];
  let arguments = (ins Variadic<DDP_Tensor>:$grads,
                       DenseI64ArrayAttr:$offsets);
  let results = (outs DDP_FlatTensor:$bucket);
  let assemblyFormat = [{
    $grads `offsets` $offsets attr-dict `:` type($grads) `->` type($bucket)
  }];
  let hasVerifier = 1;
}

def DDP_BucketUnpackOp : DDP_Op<"bucket_unpack",
    [MemoryEffects<[MemRead<DDP_ComputeStream>]>]> {
  let summary = "views of the gradients inside a flat bucket";
  let description = [{
    The inverse of `ddp.bucket_pack`: result `i` is elements
    `[offsets[i], offsets[i] + numel_i)` of the bucket, reshaped.

    ```mlir
    %g1, %g0 = ddp.bucket_unpack %r offsets [0, 1024]
        : tensor<2048xf32> -> tensor<64x16xf32>, tensor<16x64xf32>
    ```
  }];
  let arguments = (ins DDP_FlatTensor:$bucket, DenseI64ArrayAttr:$offsets);
  let results = (outs Variadic<DDP_Tensor>:$grads);
  let assemblyFormat = [{
    $bucket `offsets` $offsets attr-dict `:` type($bucket) `->` type($grads)
  }];
  let hasVerifier = 1;
}

def DDP_CheckFiniteOp : DDP_Op<"check_finite",
    [DDP_OnComputeStream, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "stop the step when a gradient bucket holds a NaN or an Inf";
  let description = [{
    Checks every element of a packed bucket before it is reduced (Megatron's
    `check_for_nan_in_grad`). Parameter `params[i]` occupies elements
    `[offsets[i], offsets[i] + numel(params[i]))` of the bucket, so when an
    element is not finite the runtime reports the bucket `index`, the
    parameter whose gradient holds it (or the padding) and the element, and
    ends the job on every rank instead of reducing garbage into the model.
    The bucket's element type may differ from the parameters' (a bf16
    gradient reduced in an f32 bucket); the extents are in elements.

    ```mlir
    ddp.check_finite %b bucket 3 params [@layers.1.weight, @layers.0.weight]
        offsets [0, 9088] : tensor<18176xf32>
    ```
  }];
  let arguments = (ins DDP_FlatTensor:$bucket, I64Attr:$index,
                       FlatSymbolRefArrayAttr:$params,
                       DenseI64ArrayAttr:$offsets);
  let assemblyFormat = [{
    $bucket `bucket` $index `params` $params `offsets` $offsets attr-dict `:`
    type($bucket)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

def DDP_SGDOp : DDP_ParamUserOp<"sgd",
    [MemoryEffects<[MemRead<DDP_ComputeStream>, MemWrite<DDP_ComputeStream>,
                    MemRead<DDP_ParamState>, MemWrite<DDP_ParamState>]>]> {
  let summary = "plain SGD update of one parameter";
  let description = [{
    `param -= lr * grad`, computed in the parameter's element type. `grad`
    must be the data-parallel reduced gradient: every rank applies the same
    update. A 16-bit parameter is updated through an fp32 main copy kept by
    the runtime (Megatron's mixed-precision optimizer), then rounded.

    ```mlir
    ddp.sgd @fc1.weight, %g lr 0.01 : tensor<64x16xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$param, DDP_Tensor:$grad,
                       F64Attr:$lr);
  let assemblyFormat = "$param `,` $grad `lr` custom<Real>($lr) attr-dict `:` type($grad)";
  let hasVerifier = 1;
}

def DDP_AdamOp : DDP_ParamUserOp<"adam",
    [MemoryEffects<[MemRead<DDP_ComputeStream>, MemWrite<DDP_ComputeStream>,
                    MemRead<DDP_ParamState>, MemWrite<DDP_ParamState>]>]> {
  let summary = "Adam update of one parameter";
  let description = [{
    Adam (Kingma and Ba) with bias correction; the moments are fp32 state
    kept by the runtime per parameter, and so is the fp32 main copy through
    which a 16-bit parameter is updated.

    ```mlir
    ddp.adam @fc1.weight, %g lr 0.001 betas(0.9, 0.999) eps 1.0e-08 : tensor<64x16xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$param, DDP_Tensor:$grad,
                       F64Attr:$lr, F64Attr:$beta1, F64Attr:$beta2,
                       F64Attr:$eps);
  let assemblyFormat = [{
    $param `,` $grad `lr` custom<Real>($lr)
    `betas` `(` custom<Real>($beta1) `,` custom<Real>($beta2) `)`
    `eps` custom<Real>($eps)
    attr-dict `:` type($grad)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Distributed optimizer
//===----------------------------------------------------------------------===//

/// The optimizer of one rank's shard of a bucket (Megatron's distributed
/// optimizer): the shared layout and group of ddp.shard_sgd and
/// ddp.shard_adam.
class DDP_ShardOptimizerOp<string mnemonic>
    : DDP_Op<mnemonic, [
          MemoryEffects<[MemRead<DDP_ComputeStream>,
                         MemWrite<DDP_ComputeStream>,
                         MemRead<DDP_ParamState>, MemWrite<DDP_ParamState>]>,
          DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  dag layoutArgs = (ins DDP_FlatTensor:$grad, FlatSymbolRefArrayAttr:$params,
                        DenseI64ArrayAttr:$offsets, FlatSymbolRefAttr:$mesh,
                        StrArrayAttr:$axes);
  let results = (outs DDP_FlatTensor:$result);
  let hasVerifier = 1;
}

def DDP_ShardSGDOp : DDP_ShardOptimizerOp<"shard_sgd"> {
  let summary = "SGD on this rank's shard of a bucket";
  let description = [{
    The bucket has `n * S` elements, `n` the size of the group and `S` the
    size of `grad`; parameter `params[i]` occupies elements
    `[offsets[i], offsets[i] + numel_i)` of it, as in `ddp.bucket_pack`.
    Group rank `r` owns elements `[r * S, (r + 1) * S)`, and `grad` is its
    shard of the reduced gradients (what `ddp.reduce_scatter` leaves it).

    For every parameter element in the shard, the result holds the value
    `ddp.sgd` would give it, computed by the same formula from the
    parameter's current value (for a 16-bit parameter, from the fp32 main
    copy of the shard's elements, which the runtime keeps) and the gradient
    element; elements of the
    shard that no parameter covers (padding) are left undefined, and
    `ddp.set_params` never reads them. The parameters
    themselves are not changed: `ddp.all_gather` collects the shards and
    `ddp.set_params` writes them. The result has the parameters' element
    type, which they must share.

    ```mlir
    %p = ddp.shard_sgd %g params [@b, @a] offsets [0, 1024] over @world[dp]
        lr 0.1 : tensor<1024xf32> -> tensor<1024xbf16>
    ```
  }];
  let arguments = !con(layoutArgs, (ins F64Attr:$lr));
  let assemblyFormat = [{
    $grad `params` $params `offsets` $offsets `over` custom<Group>($mesh, $axes)
    `lr` custom<Real>($lr) attr-dict `:` type($grad) `->` type($result)
  }];
}

def DDP_ShardAdamOp : DDP_ShardOptimizerOp<"shard_adam"> {
  let summary = "Adam on this rank's shard of a bucket";
  let description = [{
    `ddp.shard_sgd` with the update of `ddp.adam`: the fp32 moments are kept
    by the runtime for the parameter elements of the shard, and the step
    count per parameter, so every element is updated exactly as `ddp.adam`
    updates it.

    ```mlir
    %p = ddp.shard_adam %g params [@b, @a] offsets [0, 1024] over @world[dp]
        lr 0.001 betas(0.9, 0.999) eps 1.0e-08 : tensor<1024xf32> -> tensor<1024xf32>
    ```
  }];
  let arguments = !con(layoutArgs, (ins F64Attr:$lr, F64Attr:$beta1,
                                        F64Attr:$beta2, F64Attr:$eps));
  let assemblyFormat = [{
    $grad `params` $params `offsets` $offsets `over` custom<Group>($mesh, $axes)
    `lr` custom<Real>($lr)
    `betas` `(` custom<Real>($beta1) `,` custom<Real>($beta2) `)`
    `eps` custom<Real>($eps)
    attr-dict `:` type($grad) `->` type($result)
  }];
}

def DDP_SetParamsOp : DDP_Op<"set_params", [
    MemoryEffects<[MemRead<DDP_ComputeStream>, MemWrite<DDP_ComputeStream>,
                   MemWrite<DDP_ParamState>]>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "write parameters from a flat bucket of their values";
  let description = [{
    Parameter `params[i]` becomes elements `[offsets[i], offsets[i] +
    numel_i)` of `values`, reshaped; the bucket has the parameters' element
    type and its other elements are not read. With the distributed
    optimizer, `values` is the `ddp.all_gather` of the updated shards.

    ```mlir
    %w = ddp.all_gather %p over @world[dp] : tensor<1024xbf16> -> tensor<2048xbf16>
    ddp.set_params %w params [@b, @a] offsets [0, 1024] : tensor<2048xbf16>
    ```
  }];
  let arguments = (ins DDP_FlatTensor:$values, FlatSymbolRefArrayAttr:$params,
                       DenseI64ArrayAttr:$offsets);
  let assemblyFormat = [{
    $values `params` $params `offsets` $offsets attr-dict `:` type($values)
  }];
  let hasVerifier = 1;
}

/// This rank's shard of a bucket of parameter values, with the layout of
/// the shard optimizers: what `overlap-param-gather` keeps of the
/// optimizer's update across steps (docs/DistributedOptimizer.md).
class DDP_ParamShardOp<string mnemonic, list<Trait> traits>
    : DDP_Op<mnemonic, !listconcat(traits,
          [DeclareOpInterfaceMethods<SymbolUserOpInterface>])> {
  dag layoutArgs = (ins FlatSymbolRefArrayAttr:$params,
                        DenseI64ArrayAttr:$offsets, FlatSymbolRefAttr:$mesh,
                        StrArrayAttr:$axes);
  let hasVerifier = 1;
}

def DDP_GetParamShardOp : DDP_ParamShardOp<"get_param_shard", [
    MemoryEffects<[MemRead<DDP_ComputeStream>, MemWrite<DDP_ComputeStream>,
                   MemRead<DDP_ParamState>]>]> {
  let summary = "this rank's shard of a bucket of parameter values";
  let description = [{
    The bucket has `n * S` elements, `n` the size of the group and `S` the
    size of the result, and holds parameter `params[i]` at elements
    `[offsets[i], offsets[i] + numel_i)`, as for `ddp.shard_sgd`. Group rank
    `r`'s result holds the bucket's elements `[r * S, (r + 1) * S)`: each
    parameter element of the shard is read from the parameter; elements no
    parameter covers (padding) are left undefined. `ddp.all_gather` of the
    shards and `ddp.set_params` then give every rank the parameters that
    each rank holds in its own shard.

    ```mlir
    %s = ddp.get_param_shard params [@b, @a] offsets [0, 1024]
        over @world[dp] : tensor<1024xbf16>
    ```
  }];
  let arguments = layoutArgs;
  let results = (outs DDP_FlatTensor:$result);
  let assemblyFormat = [{
    `params` $params `offsets` $offsets `over` custom<Group>($mesh, $axes)
    attr-dict `:` type($result)
  }];
}

def DDP_SetParamShardOp : DDP_ParamShardOp<"set_param_shard", [
    MemoryEffects<[MemRead<DDP_ComputeStream>, MemWrite<DDP_ComputeStream>,
                   MemWrite<DDP_ParamState>]>]> {
  let summary = "write this rank's shard of a bucket into the parameters";
  let description = [{
    The inverse of `ddp.get_param_shard`: every parameter element in group
    rank `r`'s shard of the bucket (elements `[r * S, (r + 1) * S)`)
    becomes its element of `shard`; the parameters' other elements are not
    written. With `overlap-param-gather`, this is where the shard
    optimizer's result goes at the end of the step, to be gathered at the
    start of the next.

    ```mlir
    ddp.set_param_shard %p params [@b, @a] offsets [0, 1024]
        over @world[dp] : tensor<1024xbf16>
    ```
  }];
  let arguments = !con((ins DDP_FlatTensor:$shard), layoutArgs);
  let assemblyFormat = [{
    $shard `params` $params `offsets` $offsets `over` custom<Group>($mesh, $axes)
    attr-dict `:` type($shard)
  }];
}

#endif // DDP_OPS_TD
