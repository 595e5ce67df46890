//===- TestProfiles.h - Profiles with round numbers for tests ---*- C++ -*-===//

#ifndef DDP_UNITTESTS_TIMING_TESTPROFILES_H
#define DDP_UNITTESTS_TIMING_TESTPROFILES_H

#include "ddp/Timing/HardwareProfile.h"

namespace ddp::timing::test {

/// A machine whose times are easy to compute by hand: 1 TFLOP/s in every
/// dtype reached by every GEMM shape (1x1 tiles, one unit, no K penalty),
/// 1 TB/s of memory, 1 GB/s links with no latency, no kernel overhead, no
/// slowdown, 8 GPUs per node with 8 NICs of 1 GB/s.
HardwareProfile makeUnitProfile();

/// A DGX-like profile with the numbers of the worked examples in
/// docs/CostModel.md: 100 GB/s inside a node, 25 GB/s per NIC and 8 NICs,
/// 10 us base latency, 2 us per hop inside a node and 20 us across nodes.
HardwareProfile makeWorkedExampleProfile();

} // namespace ddp::timing::test

#endif // DDP_UNITTESTS_TIMING_TESTPROFILES_H
