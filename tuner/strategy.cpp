// The definitions behind tuner/strategy.hpp: search strategies behind an ask/tell interface, seeded
// explicitly, registered by name.
#include "tuner/strategy.hpp"

namespace acceltune {

Expected<std::unique_ptr<Strategy>> make_strategy(const std::string& name, const Space& space,
                                                  uint64_t seed) {
  const StrategyInfo* info = StrategyRegistry::instance().find(name);
  if (!info) {
    return input_error("unknown strategy '{}' (this build has: {})", name,
                       join_names(StrategyRegistry::instance().names()));
  }
  return info->make(space, seed);
}

}  // namespace acceltune
