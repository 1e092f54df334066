// A seeded family of collective-like landscapes (CSV for the replay kernel), for judging search
// strategies on instances they were never tuned on. Each seed draws its own structure:
// - params: algo (2-4 of ring/tree/collnet/nvls), proto (LL/LL128/Simple), channels, threads,
//   chunk, buffsize_mib (ordered, geometric steps);
// - one to three message sizes (a `bytes` column), between which the category heights and the
//   ordered optima move;
// - per algorithm x protocol a peak height (one clearly best pair, sometimes a close runner-up),
//   and per ordered param a peak position that depends on the algorithm, the protocol and the
//   size, an asymmetric width and an importance (some params nearly irrelevant, some optima at
//   the edge of the domain, as for bandwidth that saturates);
// - interactions: the optimum of one ordered param moves with another's value;
// - invalid regions of random shape: whole algorithm/protocol pairs, thresholds on an ordered
//   param under one category, an ellipse in two ordered params, chunk above the buffer;
// - rugged bumps (multiplicative, of random sign, width and category) where the class has them;
// - noise: a per-instance relative standard deviation.
// Each seed belongs to one of four classes, in turn (seed mod 4), in the proportions users meet them:
// - smooth: one size, no bumps, 1-2% noise;
// - rugged: one size, many narrow bumps, most tied to one algorithm or protocol, and ordered optima
//   that move strongly with the categories (interactions between categorical and ordered params);
// - multi-size: two or three sizes whose category heights and ordered optima move apart, a few
//   bumps, 1-2% noise; a search must find every size's optimum;
// - noisy: one size, 5% noise, a few bumps.
// The library default (ring, Simple, 8 channels, 256 threads, 512K chunk, 4 MiB) is always valid
// and is the first row.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace acceltune::bench {

enum class FamilyClass { smooth, rugged, multi_size, noisy };
const char* class_name(FamilyClass c);
FamilyClass family_class(uint64_t seed);  // seed mod 4, in the order above

struct FamilyRow {
  std::vector<std::string> cells;  // one per param, in `params` order
  uint64_t bytes = 0;
  double value = 0;  // the true objective
  double std = 0;    // the noise standard deviation
};

struct FamilyInstance {
  uint64_t seed = 0;
  FamilyClass cls = FamilyClass::smooth;
  std::vector<std::string> params;
  std::vector<uint64_t> sizes;
  std::vector<FamilyRow> rows;  // the default config first (at every size), then the others
  double noise = 0;             // relative
  bool rugged = false;
  std::string summary() const;  // one line: class, configs, sizes, noise, rugged, invalid share
  std::string csv() const;      // header: params..., bytes, objective, objective_std
  size_t configs() const { return sizes.empty() ? 0 : rows.size() / sizes.size(); }
  size_t invalid = 0;           // configs of the full product left out
};

FamilyInstance make_family_instance(uint64_t seed);

}  // namespace acceltune::bench
