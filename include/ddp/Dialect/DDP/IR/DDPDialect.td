//===- DDPDialect.td - The ddp dialect ---------------------*- tablegen -*-===//
//
// One data-parallel training step: compute, the moment each gradient is final,
// collectives (synchronous or asynchronous), gradient buckets and the
// optimizer. See docs/RationaleDDP.md for why the dialect looks as it does.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_DIALECT_TD
#define DDP_DIALECT_TD

include "mlir/IR/OpBase.td"

def DDP_Dialect : Dialect {
  let name = "ddp";
  let cppNamespace = "::ddp";
  let summary = "The communication schedule of one data-parallel training step";
  let description = [{
    The `ddp` dialect models one training step of a data-parallel (and
    tensor-parallel) model on one rank: the GEMMs and other compute in issue
    order, the moment each parameter's gradient becomes final
    (`ddp.grad_ready`), the collectives over process groups of a device mesh,
    the gradient buckets that pack several gradients into one flat buffer, and
    the optimizer step.

    Values are builtin tensors with value semantics. The order of the ops in
    the step's block is the issue order on the compute stream. A collective is
    either synchronous (its result is ready when it returns) or asynchronous:
    it then also returns a `!ddp.token`, runs on a communication stream, and
    its result may only be used after a `ddp.wait` on that token.

    The program is SPMD: every rank runs the same step, so every rank of a
    group issues the same collectives in the same order.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
}

class DDP_Op<string mnemonic, list<Trait> traits = []>
    : Op<DDP_Dialect, mnemonic, traits>;

#endif // DDP_DIALECT_TD
