// random: uniform over the valid configs, without replacement, reproducible from the seed.
#include "tuner/strategy.hpp"

namespace acceltune {
namespace {

// Spaces with at most this many valid configs are enumerated once and drawn from by an
// incremental Fisher-Yates shuffle; larger ones are sampled by rejection.
constexpr uint64_t kEnumerateLimit = 2'000'000;

class Random final : public ProposesOnce {
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
        if (!was_told(space_, c)) return c;
      }
      return std::nullopt;
    }
    for (int attempt = 0; attempt < 100000; ++attempt) {
      Config c = space_.from_ordinal(rng_.below(space_.cartesian_size()));
      if (space_.is_valid(c) && !was_told(space_, c)) return c;
    }
    return std::nullopt;
  }

 private:
  const Space& space_;
  Rng rng_;
  bool enumerated_ = false;
  std::vector<uint64_t> pool_;
  size_t next_ = 0;
};

}  // namespace

ACCELTUNE_REGISTER_STRATEGY("random", "uniform over the valid configs, without replacement", Random)

}  // namespace acceltune
