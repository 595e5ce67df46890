//===- IncrementalSimulation.cpp - The simulation, op by op ---------------===//
//
// The simulator as the schedulers drive it: one op at a time, with the
// clock and each collective's stream in view between ops.
//
//===----------------------------------------------------------------------===//

#include "StepSimulator.h"

#include "ddp/Timing/HardwareProfile.h"

using namespace mlir;
using namespace ddp;
using namespace ddp::sim;
using namespace ddp::timing;
using ddp::sim::detail::SimGroup;
using ddp::sim::detail::StepSimulator;

struct IncrementalSimulation::Impl {
  Impl(func::FuncOp step, const CostModel &model, const SimOptions &options)
      : options(options), simulator(step, model, this->options) {}
  SimOptions options;
  StepSimulator simulator;
};

IncrementalSimulation::IncrementalSimulation() = default;
IncrementalSimulation::~IncrementalSimulation() = default;

FailureOr<std::unique_ptr<IncrementalSimulation>>
IncrementalSimulation::create(func::FuncOp step, const CostModel &model,
                              const SimOptions &options, bool keepEvents) {
  std::unique_ptr<IncrementalSimulation> simulation(
      new IncrementalSimulation());
  SimOptions withoutEvents = options;
  withoutEvents.recordEvents = keepEvents && options.recordEvents;
  simulation->impl = std::make_unique<Impl>(step, model, withoutEvents);
  if (failed(simulation->impl->simulator.begin()))
    return failure();
  return simulation;
}

LogicalResult IncrementalSimulation::simulate(Operation *op) {
  return impl->simulator.simulate(op);
}

FailureOr<std::pair<unsigned, GroupPlacement>>
IncrementalSimulation::getCommStream(Operation *collective) {
  FailureOr<SimGroup *> group =
      impl->simulator.getGroup(cast<CollectiveOpInterface>(collective));
  if (failed(group))
    return failure();
  return std::make_pair((*group)->stream - 1, (*group)->placement);
}

StepClock &IncrementalSimulation::getClock() {
  return impl->simulator.getClock();
}

double IncrementalSimulation::getStepEnd() { return getClock().getStepEnd(); }

double IncrementalSimulation::getIdealComputeTime() const {
  return impl->simulator.getIdealComputeTime();
}

void IncrementalSimulation::setNotBefore(Operation *collective, double time) {
  impl->simulator.setNotBefore(collective, time);
}

std::pair<double, double> IncrementalSimulation::getLastCollective() const {
  return impl->simulator.getLastCollective();
}

double IncrementalSimulation::getTokenDone(Value token) const {
  return impl->simulator.getTokenDone(token);
}

SimResult IncrementalSimulation::finish() { return impl->simulator.finish(); }

FailureOr<Pricing> ddp::sim::getPricing(Operation *at, StringRef hardware,
                                        int64_t dataParallelSize) {
  llvm::Expected<HardwareProfile> profile = lookupHardwareProfile(hardware);
  if (!profile)
    return at->emitError(llvm::toString(profile.takeError()));
  SimOptions options;
  options.dataParallelSize = dataParallelSize;
  options.recordEvents = false;
  return Pricing{CostModel(std::move(*profile)), options};
}
