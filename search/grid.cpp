// grid: every valid config exactly once, in the space's ordinal order (first param slowest).
#include "tuner/strategy.hpp"

namespace acceltune {
namespace {

class Grid final : public ProposesOnce {
 public:
  Grid(const Space& space, uint64_t /*seed: a grid draws nothing*/) : space_(space), total_(space.cartesian_size()) {}

  std::optional<Config> ask() override {
    while (cursor_ < total_) {
      Config c = space_.from_ordinal(cursor_++);
      if (space_.is_valid(c) && !was_told(space_, c)) return c;
    }
    return std::nullopt;
  }

 private:
  const Space& space_;
  uint64_t total_;
  uint64_t cursor_ = 0;
};

}  // namespace

ACCELTUNE_REGISTER_STRATEGY("grid", "every valid config once, in a fixed order", Grid)

}  // namespace acceltune
