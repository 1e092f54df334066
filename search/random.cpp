// random: uniform over the valid configs, without replacement, reproducible from the seed.
#include <unordered_set>

#include "tuner/strategy.hpp"

namespace acceltune {
namespace {

// Spaces with at most this many valid configs are enumerated once and drawn from by an
// incremental Fisher-Yates shuffle; larger ones are sampled by rejection.
constexpr uint64_t kEnumerateLimit = 2'000'000;

class Random final : public Strategy {
 public:
  Random(const Space& space, uint64_t seed) : space_(space), rng_(hash_combine(seed, "random")) {
    if (space.cartesian_size() <= 8 * kEnumerateLimit && space.count_valid() <= kEnumerateLimit) {
      pool_.reserve(space.count_valid());
      space.for_each_valid([&](const Config& c) {
        pool_.push_back(space.to_ordinal(c));
        return true;
      });
      enumerated_ = true;
    }
  }

  std::optional<Config> ask() override {
    if (enumerated_) {
      while (next_ < pool_.size()) {
        const uint64_t j = next_ + rng_.below(pool_.size() - next_);
        std::swap(pool_[next_], pool_[j]);
        Config c = space_.from_ordinal(pool_[next_++]);
        if (!told_.count(space_.key(c))) return c;
      }
      return std::nullopt;
    }
    for (int attempt = 0; attempt < 100000; ++attempt) {
      Config c = space_.from_ordinal(rng_.below(space_.cartesian_size()));
      if (space_.is_valid(c) && !told_.count(space_.key(c))) return c;
    }
    return std::nullopt;
  }

  void tell(const Trial& trial) override { told_.insert(trial.key); }

 private:
  const Space& space_;
  Rng rng_;
  bool enumerated_ = false;
  std::vector<uint64_t> pool_;
  size_t next_ = 0;
  std::unordered_set<std::string> told_;
};

}  // namespace

ACCELTUNE_REGISTER(StrategyInfo, "random",
                   (StrategyInfo{"uniform over the valid configs, without replacement",
                                 [](const Space& space, uint64_t seed) -> Expected<std::unique_ptr<Strategy>> {
                                   return std::unique_ptr<Strategy>(new Random(space, seed));
                                 }}))

}  // namespace acceltune
