// grid: every valid config exactly once, in the space's ordinal order (first param slowest).
#include <unordered_set>

#include "tuner/strategy.hpp"

namespace acceltune {
namespace {

class Grid final : public Strategy {
 public:
  explicit Grid(const Space& space) : space_(space), total_(space.cartesian_size()) {}

  std::optional<Config> ask() override {
    while (cursor_ < total_) {
      Config c = space_.from_ordinal(cursor_++);
      if (space_.is_valid(c) && !told_.count(space_.key(c))) return c;
    }
    return std::nullopt;
  }

  void tell(const Trial& trial) override { told_.insert(trial.key); }

 private:
  const Space& space_;
  uint64_t total_;
  uint64_t cursor_ = 0;
  std::unordered_set<std::string> told_;
};

}  // namespace

ACCELTUNE_REGISTER(StrategyInfo, "grid",
                   (StrategyInfo{"every valid config once, in a fixed order",
                                 [](const Space& space, uint64_t) -> Expected<std::unique_ptr<Strategy>> {
                                   return std::unique_ptr<Strategy>(new Grid(space));
                                 }}))

}  // namespace acceltune
