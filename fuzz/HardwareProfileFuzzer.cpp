//===- HardwareProfileFuzzer.cpp - Fuzz the hardware profile reader -------===//
//
// Input: a hardware profile as `hw=<file>` reads it. A profile that reads
// must write back to JSON that reads again.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "ddp/Timing/HardwareProfile.h"
#include "ddp/Support/BoundedJSON.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<llvm::json::Value> json =
      ddp::parseJSON(ddp::fuzz::asText(data, size));
  if (!json) {
    llvm::consumeError(json.takeError());
    return 0;
  }
  llvm::Expected<ddp::sim::HardwareProfile> profile =
      ddp::sim::parseHardwareProfile(*json, "fuzz");
  if (!profile) {
    llvm::consumeError(profile.takeError());
    return 0;
  }
  llvm::Expected<ddp::sim::HardwareProfile> reread =
      ddp::sim::parseHardwareProfile(ddp::sim::toJSON(*profile), "fuzz");
  if (!reread)
    ddp::fuzz::reportBug("a hardware profile does not read back");
  return 0;
}
