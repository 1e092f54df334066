// Search strategies behind an ask/tell interface, seeded explicitly, registered by name.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>

#include "tuner/registry.hpp"
#include "tuner/rng.hpp"
#include "tuner/trial.hpp"

namespace acceltune {

class Strategy {
 public:
  virtual ~Strategy() = default;
  // The next config to measure; empty when the strategy has nothing left to propose.
  // Never a config it has been told about already.
  virtual std::optional<Config> ask() = 0;
  // Every finished trial is told, the default and resumed ones included. Failed trials mark
  // their config infeasible; they are not zero bandwidth.
  virtual void tell(const Trial& trial) = 0;
  // The measurement effort for the config the last ask() returned (multi-fidelity strategies
  // may propose a config again at a higher effort).
  virtual double effort() const { return 1.0; }
};

// A strategy that proposes each config at most once: it remembers every config it was told.
class ProposesOnce : public Strategy {
 public:
  void tell(const Trial& trial) override { told_.insert(trial.key); }

 protected:
  bool was_told(const Space& space, const Config& c) const { return told_.count(space.key(c)) > 0; }

 private:
  std::unordered_set<std::string> told_;
};

struct StrategyInfo {
  std::string description;
  std::function<Expected<std::unique_ptr<Strategy>>(const Space& space, uint64_t seed)> make;
};
using StrategyRegistry = Registry<StrategyInfo>;

Expected<std::unique_ptr<Strategy>> make_strategy(const std::string& name, const Space& space,
                                                  uint64_t seed);

}  // namespace acceltune

// Registers strategy Type (constructed from the space and the study's seed) under `name`: one
// line, the last of the strategy's file.
#define ACCELTUNE_REGISTER_STRATEGY(name, description, Type)                                                  \
  ACCELTUNE_REGISTER(::acceltune::StrategyInfo, name,                                                        \
                     (::acceltune::StrategyInfo{description, [](const ::acceltune::Space& space, uint64_t seed) \
                                                -> ::acceltune::Expected<std::unique_ptr<::acceltune::Strategy>> { \
                                                  return std::unique_ptr<::acceltune::Strategy>(new Type(space, seed)); \
                                                }}))
