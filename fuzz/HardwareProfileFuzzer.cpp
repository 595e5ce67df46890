//===- HardwareProfileFuzzer.cpp - Fuzz the hardware profile reader -------===//
//
// Input: a hardware profile as `hw=<file>` reads it. A profile that reads
// must write back to JSON that reads again.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "ddp/Timing/HardwareProfile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::optional<ddp::timing::HardwareProfile> profile =
      ddp::fuzz::readJSONInput<ddp::timing::HardwareProfile>(
          data, size, ddp::timing::parseHardwareProfile);
  if (!profile)
    return 0;
  llvm::Expected<ddp::timing::HardwareProfile> reread =
      ddp::timing::parseHardwareProfile(ddp::timing::toJSON(*profile), "fuzz");
  if (!reread)
    ddp::fuzz::reportBug("a hardware profile does not read back");
  return 0;
}
