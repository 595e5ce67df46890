//===- DDPAttributes.td - Attributes of the ddp dialect ----*- tablegen -*-===//
//
// The bucket layout that ddp-assign-buckets records on the step and that
// ddp-bucketize, ddp-overlap-grad-reduce and ddp-print-bucket-layout read
// back (a user may edit it in between).
//
//===----------------------------------------------------------------------===//

#ifndef DDP_ATTRIBUTES_TD
#define DDP_ATTRIBUTES_TD

include "ddp/Dialect/DDP/IR/DDPDialect.td"
include "ddp/Dialect/DDP/IR/DDPEnums.td"
include "mlir/IR/AttrTypeBase.td"

class DDP_Attr<string name, string attrMnemonic>
    : AttrDef<DDP_Dialect, name> {
  let mnemonic = attrMnemonic;
}

// An f64 written as a bare number (`1.25e+03`, no `: f64`); absent when
// unset.
def DDP_OptionalF64Parameter
    : OptionalParameter<"mlir::FloatAttr", "a floating-point number"> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::mlir::FloatAttr> {
    double value;
    if (::mlir::failed($_parser.parseFloat(value)))
      return ::mlir::failure();
    return $_parser.getBuilder().getF64FloatAttr(value);
  }() }];
  let printer = [{ $_printer.printFloat($_self.getValue()) }];
}

def DDP_BucketAttr : DDP_Attr<"Bucket", "bucket"> {
  let summary = "one gradient bucket of the step";
  let description = [{
    An entry of the step's `ddp.buckets`, in issue order: the flat buffer of
    `padded_numel` elements of `dtype` whose first `numel` hold the gradients
    assigned to it (the `ddp.bucket` and `ddp.bucket_offset` of their
    `ddp.grad_ready`), reduced over the group `axes` of `mesh`.
    `average_in_collective` reduces with `avg` in the collective instead of
    pre-scaling by 1/n and summing; `check_finite` checks the packed bucket
    for NaN and Inf before the collective. Every field is required, once,
    in any order.

    ```mlir
    func.func @step(...) attributes {ddp.buckets = [
        #ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 9183,
                    padded_numel = 9216, average_in_collective = false,
                    check_finite = false>]}
    ```
  }];
  let parameters = (ins
    "mlir::Type":$dtype,
    "mlir::FlatSymbolRefAttr":$mesh,
    "mlir::ArrayAttr":$axes,
    "int64_t":$numel,
    "int64_t":$padded_numel,
    AttrParameter<"bool", "true or false">:$average_in_collective,
    AttrParameter<"bool", "true or false">:$check_finite
  );
  // Written by hand (DDPAttributes.cpp) rather than as struct(params): the
  // generated parser reports a missing field as "expected ','"; this one names
  // the field, and accepts the fields in any order.
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The element type, which the verifier checks is a float type the
    /// dialect carries.
    mlir::FloatType getElementType() const {
      return mlir::cast<mlir::FloatType>(getDtype());
    }
  }];
}

def DDP_BucketPolicyAttr : DDP_Attr<"BucketPolicy", "bucket_policy"> {
  let summary = "the policy that laid out the step's buckets";
  let description = [{
    The step's `ddp.bucket_policy`: which policy of `ddp-assign-buckets`
    decided `ddp.buckets`, and, for `auto`, the hardware profile it optimised
    for and the step time it predicted in microseconds.

    ```mlir
    ddp.bucket_policy = #ddp.bucket_policy<name = megatron>
    ddp.bucket_policy = #ddp.bucket_policy<name = auto, hw = "h100-sxm-ib400",
                                           predicted_step_time_us = 1.25e+03>
    ```
  }];
  let parameters = (ins
    EnumParameter<DDP_BucketPolicy>:$name,
    OptionalParameter<"mlir::StringAttr">:$hw,
    DDP_OptionalF64Parameter:$predicted_step_time_us
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // DDP_ATTRIBUTES_TD
