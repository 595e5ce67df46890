//===- TestProfiles.cpp - Profiles with round numbers for tests -----------===//

#include "TestProfiles.h"

using namespace ddp::timing;

HardwareProfile ddp::timing::test::makeUnitProfile() {
  HardwareProfile p;
  p.name = "unit";
  p.gpusPerNode = 8;
  p.peakFlops = {1e12, 1e12, 1e12, 1e12};
  p.gemm = {/*maxEfficiency=*/1, /*tileM=*/1, /*tileN=*/1,
            /*numComputeUnits=*/1, /*kHalf=*/0};
  p.memoryBandwidth = 1e12;
  p.memoryEfficiency = 1;
  p.kernelOverhead = 0;
  p.intraNodeBusBandwidth = 1e9;
  p.intraNodeHopLatency = 0;
  p.nicBusBandwidth = 1e9;
  p.nicsPerNode = 8;
  p.interNodeHopLatency = 0;
  p.collectiveBaseLatency = 0;
  p.treeBandwidthFraction = 1;
  p.commComputeSlowdown = 1;
  return p;
}

HardwareProfile ddp::timing::test::makeWorkedExampleProfile() {
  HardwareProfile p = makeUnitProfile();
  p.name = "worked-example";
  p.intraNodeBusBandwidth = 100e9;
  p.intraNodeHopLatency = 2e-6;
  p.nicBusBandwidth = 25e9;
  p.nicsPerNode = 8;
  p.interNodeHopLatency = 20e-6;
  p.collectiveBaseLatency = 10e-6;
  p.treeBandwidthFraction = 0.9;
  return p;
}
