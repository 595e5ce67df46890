//===- ScheduleFuzzOptions.cpp - What fuzz-schedule runs, and how ---------===//

#include "ScheduleFuzzOptions.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace llvm;
using namespace ddp::fuzz;

unsigned FuzzedOption::getBits() const {
  return Log2_32_Ceil(values.size() + 1);
}

// Values chosen for what they reach: the boundaries each option checks, a
// group size that is not a power of two, and sizes past int64's products.
// A name shared by several passes (dp, hw, output) has values that suit
// every one of them.
ArrayRef<FuzzedOption> ddp::fuzz::getFuzzedOptions() {
  static const SmallVector<StringRef, 8> sizes = {
      "1", "3", "64", "4096", "65536", "0", "-1", "4611686018427387904"};
  static const SmallVector<StringRef, 8> flipTrue = {"true"};
  static const SmallVector<StringRef, 8> flipFalse = {"false"};
  static const SmallVector<StringRef, 8> both = {"true", "false"};
  static const FuzzedOption options[] = {
      // ddp-schedule, ddp-assign-buckets.
      {"policy", {"megatron", "pytorch", "size", "auto"}},
      {"hw",
       {"h100-sxm-ib400", "cpu-mpi-2core", "a100-sxm-ib200", "h100-sxm-nvlink",
        "no-such-profile"}},
      {"dp", {"1", "2", "3", "6", "512", "0", "-1", "4611686018427387904"}},
      {"overlap-grad-reduce", both},
      {"bucket-size", sizes},
      {"bucket-bytes", sizes},
      {"num-buckets", {"1", "2", "3", "0", "-1", "9223372036854775807"}},
      {"use-distributed-optimizer", both},
      {"overlap-param-gather", both},
      {"align-param-gather", both},
      {"num-distributed-optimizer-instances", {"2", "3", "1", "0", "-1"}},
      {"pad-buckets-for-high-nccl-busbw", flipTrue},
      {"grad-reduce-in-fp32", flipTrue},
      {"average-in-collective", flipTrue},
      {"check-for-nan-in-grad", flipTrue},
      {"first-bucket-bytes", sizes},
      {"bucket-cap-bytes", sizes},
      {"max-bucket-gradients", {"1", "2", "64", "0", "-1"}},
      // ddp-overlap-tp-comm and its pipeline options.
      {"tp-comm-overlap", both},
      {"tp-comm-overlap-ag", flipFalse},
      {"tp-comm-overlap-rs", flipFalse},
      {"tp-comm-overlap-rs-dgrad", flipTrue},
      {"tp-comm-bulk-dgrad", flipFalse},
      {"tp-comm-bulk-wgrad", flipFalse},
      {"tp-comm-overlap-disable-qkv", flipTrue},
      {"tp-comm-overlap-disable-fc1", flipTrue},
      // Eight values, as before its parser rejected 0 and x when parsed:
      // the bits of every option after it decode as they did.
      {"tp-comm-num-splits",
       {"auto", "1", "2", "3", "4", "6", "8", "9223372036854775807"}},
      {"print-bucket-layout", {"/dev/null"}},
      // Megatron-LM's flag names.
      {"ddp-bucket-size", {"1", "64", "0", "-1"}},
      {"ddp-num-buckets", {"1", "2", "0", "-1"}},
      {"ddp-pad-buckets-for-high-nccl-busbw", flipTrue},
      {"ddp-average-in-collective", flipTrue},
      {"accumulate-allreduce-grads-in-fp32", flipTrue},
      {"check-for-nan-in-loss-and-grad", flipTrue},
      {"disable-tp-comm-overlap-ag", flipTrue},
      {"disable-tp-comm-overlap-rs", flipTrue},
      {"disable-tp-comm-bulk-dgrad", flipTrue},
      {"disable-tp-comm-bulk-wgrad", flipTrue},
      // ddp-simulate.
      {"algorithm", {"ring", "tree", "auto"}},
      {"fp8-gemms", flipTrue},
      {"step", {"step", "main", "missing"}},
      {"report", {"/dev/null"}},
      {"trace", {"/dev/null"}},
      {"timeline", {"/dev/null"}},
      // ddp-lower-to-runtime.
      {"param-prefix", {"scheduled:", "p."}},
      {"validate-storage", flipFalse},
      {"abi-version", {"0", "-1", "8"}},
      // ddp-pipeline-stages (last, so that the bits of the options above
      // decode as they did).
      {"pipeline-schedule",
       {"1f1b", "interleaved", "gpipe", "zb-h1", "zigzag"}},
      {"microbatch-group-size",
       {"1", "2", "3", "4", "0", "-1", "9223372036854775807"}},
      // ddp-extract-pipeline-stage.
      {"rank", {"0", "1", "2", "3", "-1", "9223372036854775807"}},
      // ddp-pipeline-stages' p2p calls (after the options above, for the
      // same reason).
      {"overlap-p2p-comm", flipTrue},
      {"batch-p2p-comm", flipFalse},
      {"overlap-p2p-comm-warmup-flush", flipTrue},
      {"deallocate-pipeline-outputs", flipTrue},
      // ddp-print-bucket-layout (last, for the same reason).
      {"format", {"json", "table", "xml"}},
      // ddp-overlap-moe-comm (last, for the same reason).
      {"moe-shared-expert-overlap", both},
      // ddp-combined-1f1b (last, for the same reason).
      {"overlap-moe-expert-parallel-comm", both},
      // ddp-combined-1f1b's delayed weight gradients (last, for the same
      // reason).
      {"delay-wgrad-compute", both},
      // ddp-simulate's routing imbalance (last, for the same reason).
      {"moe-imbalance", {"1.5", "4", "1", "0.5", "nan"}},
      // ddp-schedule-compute (last, for the same reason).
      {"wgrad-schedule", {"delayed", "auto", "in-place"}},
      {"memory-cap-gib", {"0.001", "64", "0", "-1", "nan", "1e300"}},
      // ddp-split-batch (last, for the same reason).
      {"batch-split", {"2", "3", "auto", "1", "4096"}},
      // ddp-shard-params and its strategy (last, for the same reason;
      // policy=unit is reached through optim_grads_params).
      {"data-parallel-sharding-strategy",
       {"optim_grads_params", "optim", "optim_grads", "no_shard"}},
      // 1 is the default; three values kept the table in the header's 128
      // bits, before it grew to 136.
      {"fsdp-prefetch", {"0", "2", "4294967295"}},
      {"reshard-after-forward", flipFalse},
      {"fsdp-keep-last-units", {"2", "1", "4294967295"}},
      // ddp-lower-to-runtime's buffer reuse (in the 17th option byte, which
      // the seeds hold as zero: every option before decodes as it did).
      {"reuse-buffers", flipFalse},
      // ddp-shard-params' Megatron-FSDP budget and double buffers.
      {"suggested-communication-unit-size", {"1", "64", "0"}},
      {"fsdp-double-buffer", flipTrue},
      // ddp-distribute-optimizer's hybrid FSDP (its values; the option
      // parser refuses the others). Two values take the bits three did.
      {"outer-dp-sharding-strategy", {"optim", "no_shard"}},
      // ddp-shard-params' depths per unit: a short list (a unit count
      // mismatch on most steps), a word that is no depth, one past 32 bits.
      {"fsdp-unit-prefetch", {"0,2", "x", "4294967296"}},
  };
  return options;
}

ArrayRef<std::pair<StringRef, StringRef>> ddp::fuzz::getFixedOptions() {
  // ddp-simulate, ddp-print-bucket-layout and ddp-step-stats print to
  // stdout by default, which would drown libFuzzer's output.
  static const std::pair<StringRef, StringRef> fixed[] = {
      {"output", "/dev/null"}};
  return fixed;
}

unsigned ddp::fuzz::getOptionBits() {
  unsigned bits = 0;
  for (const FuzzedOption &option : getFuzzedOptions())
    bits += option.getBits();
  return bits;
}

ArrayRef<PassAlone> ddp::fuzz::getPassesFuzzedAlone() {
  static const PassAlone passes[] = {
      {"ddp-assign-buckets", true},
      {"ddp-bucketize", true},
      {"ddp-distribute-optimizer", false},
      {"ddp-overlap-grad-reduce", true},
      {"ddp-overlap-param-gather", true},
      {"ddp-overlap-tp-comm", true},
      {"ddp-overlap-moe-comm", true},
      {"ddp-combined-1f1b", true},
      {"ddp-print-bucket-layout", false},
      {"ddp-verify-collective-order", false},
      {"ddp-simulate", false},
      {"ddp-step-stats", false},
      {"ddp-lower-to-runtime", false},
      {"ddp-pipeline-stages", false},
      {"ddp-print-pipeline-schedule", false},
      {"ddp-extract-pipeline-stage", false},
      {"ddp-schedule-compute", true},
      {"ddp-split-batch", false},
      {"ddp-shard-params", true},
  };
  return passes;
}

std::string
ddp::fuzz::decodeOptions(ArrayRef<uint8_t> bytes,
                         function_ref<bool(StringRef)> accepts) {
  std::string text;
  auto add = [&](StringRef name, StringRef value) {
    if (!accepts(name))
      return;
    if (!text.empty())
      text += ' ';
    text += (name + "=" + value).str();
  };
  unsigned bit = 0;
  auto read = [&](unsigned count) {
    unsigned code = 0;
    for (unsigned i = 0; i < count; ++i, ++bit) {
      unsigned byte = bit / 8;
      if (byte < bytes.size() && (bytes[byte] >> (bit % 8)) & 1)
        code |= 1u << i;
    }
    return code;
  };
  for (const FuzzedOption &option : getFuzzedOptions())
    if (unsigned code = read(option.getBits()))
      add(option.name, option.values[(code - 1) % option.values.size()]);
  for (auto [name, value] : getFixedOptions())
    add(name, value);
  return text;
}

SmallVector<std::string> ddp::fuzz::getPrintedOptionNames(StringRef printed) {
  // Names start after `{` or a space and end at `=`; values hold no `=`
  // except inside a nested `{...}`, which is skipped.
  SmallVector<std::string> names;
  unsigned depth = 0;
  size_t nameStart = StringRef::npos;
  for (auto [i, c] : enumerate(printed)) {
    if (c == '{') {
      ++depth;
      nameStart = depth == 1 ? i + 1 : StringRef::npos;
    } else if (c == '}') {
      depth = depth ? depth - 1 : 0;
    } else if (c == ' ' && depth == 1) {
      nameStart = i + 1;
    } else if (c == '=' && depth == 1 && nameStart != StringRef::npos) {
      names.push_back(printed.slice(nameStart, i).str());
      nameStart = StringRef::npos;
    }
  }
  return names;
}

SmallVector<std::string> ddp::fuzz::findUnfuzzedOptions(StringRef printed) {
  SmallVector<std::string> missing;
  for (const std::string &name : getPrintedOptionNames(printed)) {
    bool listed =
        any_of(getFuzzedOptions(),
               [&](const FuzzedOption &option) { return option.name == name; }) ||
        any_of(getFixedOptions(),
               [&](const auto &option) { return option.first == name; });
    if (!listed)
      missing.push_back(name);
  }
  return missing;
}

std::string ddp::fuzz::getSchedulePipelineText(StringRef scheduleOptions,
                                               StringRef simulateOptions,
                                               StringRef lowerOptions) {
  return getPipelineText({"ddp-schedule", false}, scheduleOptions) + ", " +
         getPipelineText({"ddp-simulate", false}, simulateOptions) + ", " +
         getPipelineText({"ddp-lower-to-runtime", false}, lowerOptions);
}

std::string ddp::fuzz::getPipelineText(const PassAlone &pass,
                                       StringRef options) {
  std::string text = pass.name.str() + "{" + options.str() + "}";
  if (pass.onFunctions)
    text = "func.func(" + text + ")";
  return text;
}
