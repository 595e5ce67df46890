//===- JSONFields.h - Reading typed fields of the input JSON ----*- C++ -*-===//
//
// Every error names the input (`source`) and the field, so that a user can
// find the line to fix: `model.json: field 'num_layers': expected a positive
// integer, got -3`.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_LIB_IMPORT_JSONFIELDS_H
#define DDP_LIB_IMPORT_JSONFIELDS_H

#include "ddp/Import/MoEDispatch.h"
#include "ddp/Import/Recompute.h"
#include "ddp/Import/StepOptions.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

namespace ddp::importer {

llvm::Error fieldError(llvm::StringRef source, const llvm::Twine &field,
                       const llvm::Twine &message);

/// An integer of at least `minValue`.
llvm::Expected<int64_t> readInteger(const llvm::json::Value &value,
                                    llvm::StringRef source,
                                    const llvm::Twine &field, int64_t minValue);
llvm::Expected<bool> readBool(const llvm::json::Value &value,
                              llvm::StringRef source, const llvm::Twine &field);
/// Any finite number; range checks are the caller's.
llvm::Expected<double> readNumber(const llvm::json::Value &value,
                                  llvm::StringRef source,
                                  const llvm::Twine &field);
llvm::Expected<llvm::StringRef> readString(const llvm::json::Value &value,
                                           llvm::StringRef source,
                                           const llvm::Twine &field);
/// The top level of an input must be an object.
llvm::Expected<const llvm::json::Object *>
readObject(const llvm::json::Value &value, llvm::StringRef source,
           const llvm::Twine &field);

/// Reads `key` into `optimizer` when it is one of the optimizer fields
/// (`optimizer`, `lr`, `adam_beta1`, `adam_beta2`, `adam_eps`); returns
/// false when it is not.
llvm::Expected<bool> readOptimizerField(llvm::StringRef key,
                                        const llvm::json::Value &value,
                                        llvm::StringRef source,
                                        OptimizerConfig &optimizer);
void writeOptimizerFields(const OptimizerConfig &optimizer,
                          llvm::json::Object &object);

/// `recompute_granularity`, `recompute_method`, `recompute_num_layers`:
/// false for any other key.
llvm::Expected<bool> readRecomputeField(llvm::StringRef key,
                                        const llvm::json::Value &value,
                                        llvm::StringRef source,
                                        RecomputeConfig &recompute);
/// The fields given; none without recomputation.
/// moe_token_dispatcher_type, moe_expert_capacity_factor and
/// moe_pad_expert_input_to_capacity; false for another key.
llvm::Expected<bool> readMoEDispatchField(llvm::StringRef key,
                                          const llvm::json::Value &value,
                                          llvm::StringRef source,
                                          MoEDispatchConfig &moe);
/// The fields that differ from the defaults.
void writeMoEDispatchFields(const MoEDispatchConfig &moe,
                            llvm::json::Object &object);
void writeRecomputeFields(const RecomputeConfig &recompute,
                          llvm::json::Object &object);

/// The largest size an importer turns into a tensor dimension (tokens per
/// microbatch, hidden or vocabulary size, a parameter's extent). The steps'
/// activations are 2-D over such sizes, so below 2^31 no element count
/// overflows int64; no published model comes near it.
constexpr int64_t kMaxDimension = int64_t(1) << 31;

/// Bounds on the number of ops a step is built with: a step holds about 50
/// ops per layer and microbatch (5 per inventory parameter and microbatch)
/// and is built in memory and printed at a few microseconds per op, so these
/// keep it to a few million ops. Published models need a few thousand layer
/// passes.
constexpr int64_t kMaxLayerPasses = int64_t(1) << 16;
constexpr int64_t kMaxParamPasses = int64_t(1) << 20;

/// An error naming `field` unless `size` is at most kMaxDimension. `size` is
/// a double so that computing it (`what`, e.g. "micro_batch_size x
/// seq_length") cannot overflow.
llvm::Error checkDimension(llvm::StringRef source, const llvm::Twine &field,
                           llvm::StringRef what, double size);

/// An error naming `data_parallel_size` unless `size` ranks are at most
/// bucketing::kMaxGroupSize, the largest group the scheduling passes reduce
/// gradients over. Every other mesh axis divides a bounded tensor dimension
/// (T the heads, E the experts), so with this bound the mesh's rank count
/// fits in int64 as the dialect requires.
llvm::Error checkDataParallelSize(llvm::StringRef source, int64_t size);

/// A field that is not known: the message lists the known ones so that a
/// typo is easy to spot.
llvm::Error unknownFieldError(llvm::StringRef source, llvm::StringRef key,
                              llvm::ArrayRef<llvm::StringRef> knownFields);

} // namespace ddp::importer

#endif // DDP_LIB_IMPORT_JSONFIELDS_H
