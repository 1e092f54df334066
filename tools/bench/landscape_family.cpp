// The definitions behind tools/bench/landscape_family.hpp: a seeded family of collective-like
// landscapes (CSV for the replay kernel), for judging search strategies on instances they were
// never tuned on.
#include "tools/bench/landscape_family.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "tuner/rng.hpp"

namespace acceltune::bench {
namespace {

const std::vector<std::string> kAlgos = {"ring", "tree", "collnet", "nvls"};
const std::vector<std::string> kProtos = {"LL", "LL128", "Simple"};
const std::vector<int64_t> kChannels = {1, 2, 4, 8, 12, 16, 24, 32};
const std::vector<int64_t> kThreads = {64, 128, 256, 512, 1024};
const std::vector<int64_t> kChunks = {32768, 65536, 131072, 262144, 524288, 1048576, 2097152, 4194304};
const std::vector<int64_t> kBuffs = {1, 2, 4, 8, 16};
const std::vector<uint64_t> kSizes = {4096, 65536, 1048576, 16777216, 134217728};
constexpr size_t kOrdered = 4;  // channels, threads, chunk, buffsize

double uniform(Rng& r, double lo, double hi) { return lo + (hi - lo) * r.uniform(); }

// One ordered param's response: an asymmetric bell in [0,1] coordinates raised to an importance.
struct Response {
  double base = 0.5;                  // peak position at the middle size, before offsets
  std::vector<double> by_algo, by_proto;
  double by_size = 0;                 // slope of the peak over the size coordinate
  double left = 0.3, right = 0.3;     // widths
  double importance = 1;              // exponent; near 0: the param hardly matters
};

struct Bump {
  std::vector<double> centre;
  double radius = 0.1, amplitude = 0;
  int algo = -1;   // -1: every algorithm
  int proto = -1;  // -1: every protocol
};

struct Rule {
  int algo = -1, proto = -1;  // category it applies to (-1: any)
  size_t dim = 0;
  double threshold = 0;
  bool above = true;
};

}  // namespace

const char* class_name(FamilyClass c) {
  switch (c) {
    case FamilyClass::smooth: return "smooth";
    case FamilyClass::rugged: return "rugged";
    case FamilyClass::multi_size: return "multi-size";
    case FamilyClass::noisy: return "noisy";
  }
  return "?";
}

FamilyClass family_class(uint64_t seed) { return static_cast<FamilyClass>(seed % 4); }

FamilyInstance make_family_instance(uint64_t seed) {
  Rng rng(hash_combine(seed, "landscape-family"));
  FamilyInstance inst;
  inst.seed = seed;
  inst.cls = family_class(seed);
  const bool rugged_class = inst.cls == FamilyClass::rugged, multi = inst.cls == FamilyClass::multi_size;
  inst.params = {"algo", "proto", "channels", "threads", "chunk", "buffsize_mib"};
  // Categories: ring always (it is the default), then one to three others.
  std::vector<std::string> algos = {"ring"};
  {
    std::vector<std::string> rest(kAlgos.begin() + 1, kAlgos.end());
    for (size_t i = 0; i < rest.size(); ++i) std::swap(rest[i], rest[i + rng.below(rest.size() - i)]);
    const size_t extra = 1 + rng.below(3);
    algos.insert(algos.end(), rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(extra));
  }
  const size_t A = algos.size(), P = kProtos.size();
  // Sizes: one to three, with their position on a log axis in [0,1].
  {
    const uint64_t n = multi ? 2 + rng.below(2) : 1;
    std::vector<uint64_t> pool = kSizes;
    for (size_t i = 0; i < pool.size(); ++i) std::swap(pool[i], pool[i + rng.below(pool.size() - i)]);
    inst.sizes.assign(pool.begin(), pool.begin() + static_cast<std::ptrdiff_t>(n));
    std::sort(inst.sizes.begin(), inst.sizes.end());
  }
  auto size_pos = [&](uint64_t b) {
    return (std::log2(static_cast<double>(b)) - 12.0) / (27.0 - 12.0);  // 4K..128M -> 0..1
  };
  inst.noise = inst.cls == FamilyClass::noisy ? 0.05 : uniform(rng, 0.01, 0.02);
  inst.rugged = inst.cls != FamilyClass::smooth;
  // How strongly the ordered optima move with the categories and between sizes.
  const double by_category = rugged_class ? 2.0 : 1.0, by_size = multi ? 0.6 : 0.3;

  // Heights per category pair, and how each moves with the size.
  std::vector<double> height(A * P), drift(A * P);
  for (auto& h : height) h = uniform(rng, 0.3, 0.85);
  for (auto& d : drift) d = (multi ? 1.2 : 0.6) * rng.normal();
  const size_t top = rng.below(A * P);
  height[top] = 1.0;
  if (rng.uniform() < 0.5) {
    size_t second = rng.below(A * P);
    if (second == top) second = (second + 1) % (A * P);
    height[second] = uniform(rng, 0.90, 0.97);
  }
  // Responses of the ordered params.
  std::vector<Response> resp(kOrdered);
  for (auto& r : resp) {
    const double edge = rng.uniform();
    r.base = edge < 0.15 ? 1.1 : edge < 0.25 ? -0.1 : uniform(rng, 0.15, 0.85);
    r.by_algo.resize(A);
    r.by_proto.resize(P);
    for (auto& x : r.by_algo) x = by_category * 0.18 * rng.normal();
    for (auto& x : r.by_proto) x = by_category * 0.12 * rng.normal();
    r.by_size = by_size * rng.normal();
    r.left = uniform(rng, 0.2, 0.6);
    r.right = uniform(rng, 0.2, 0.6);
    r.importance = rng.uniform() < 0.2 ? uniform(rng, 0.03, 0.15) : uniform(rng, 0.3, 1.0);
  }
  // Interactions: the optimum of `to` moves with the value of `from`.
  struct Interaction {
    size_t from, to;
    double slope;
  };
  std::vector<Interaction> inter;
  for (uint64_t k = 0, n = 1 + rng.below(3); k < n; ++k) {
    const size_t from = rng.below(kOrdered);
    size_t to = rng.below(kOrdered);
    if (to == from) to = (to + 1) % kOrdered;
    inter.push_back({from, to, uniform(rng, -0.6, 0.6)});
  }
  // Rugged bumps: many narrow ones, mostly tied to a category, in the rugged class; a few wide ones
  // in the multi-size and noisy classes.
  std::vector<Bump> bumps;
  if (inst.rugged) {
    const uint64_t n = rugged_class ? 10 + rng.below(11) : 3 + rng.below(4);
    for (uint64_t k = 0; k < n; ++k) {
      Bump b;
      b.centre.resize(kOrdered);
      for (auto& c : b.centre) c = rng.uniform();
      b.radius = rugged_class ? uniform(rng, 0.05, 0.14) : uniform(rng, 0.1, 0.2);
      b.amplitude = rugged_class ? uniform(rng, -0.4, 0.4) : uniform(rng, -0.2, 0.2);
      const double tie = rng.uniform();
      if (tie < (rugged_class ? 0.45 : 0.3)) b.algo = static_cast<int>(rng.below(A));
      else if (tie < (rugged_class ? 0.8 : 0.5)) b.proto = static_cast<int>(rng.below(P));
      bumps.push_back(b);
    }
  }
  // Invalid regions.
  std::vector<std::pair<size_t, size_t>> banned_pairs;
  if (rng.uniform() < 0.6) banned_pairs.push_back({1 + rng.below(A - 1), rng.below(P)});
  std::vector<Rule> rules;
  for (uint64_t k = 0, n = rng.below(3); k < n; ++k) {
    Rule r;
    if (rng.uniform() < 0.5) r.algo = static_cast<int>(rng.below(A));
    else r.proto = static_cast<int>(rng.below(P));
    r.dim = rng.below(kOrdered);
    r.above = rng.uniform() < 0.5;
    r.threshold = r.above ? uniform(rng, 0.55, 0.9) : uniform(rng, 0.1, 0.45);
    rules.push_back(r);
  }
  const bool chunk_in_buffer = rng.uniform() < 0.7;
  const bool hole = rng.uniform() < 0.5;
  size_t hd0 = rng.below(kOrdered), hd1 = (hd0 + 1 + rng.below(kOrdered - 1)) % kOrdered;
  const double hc0 = rng.uniform(), hc1 = rng.uniform(), hr0 = uniform(rng, 0.1, 0.3), hr1 = uniform(rng, 0.1, 0.3);
  // Overall scale per size: small messages move less.
  std::vector<double> scale;
  for (uint64_t b : inst.sizes) scale.push_back(200.0 * std::pow(size_pos(b) + 0.05, 1.5));

  const std::vector<const std::vector<int64_t>*> domains = {&kChannels, &kThreads, &kChunks, &kBuffs};
  auto coord = [&](size_t d, size_t i) { return static_cast<double>(i) / static_cast<double>(domains[d]->size() - 1); };
  const std::vector<size_t> def_index = {3, 2, 4, 2};  // 8 channels, 256 threads, 512K chunk, 4 MiB
  const size_t def_algo = 0, def_proto = 2;

  auto valid = [&](size_t a, size_t p, const std::vector<size_t>& ix, const std::vector<double>& u) {
    if (a == def_algo && p == def_proto && ix == def_index) return true;
    for (const auto& [ba, bp] : banned_pairs) {
      if (a == ba && p == bp) return false;
    }
    for (const auto& r : rules) {
      if (r.algo >= 0 && static_cast<size_t>(r.algo) != a) continue;
      if (r.proto >= 0 && static_cast<size_t>(r.proto) != p) continue;
      if (r.above ? u[r.dim] > r.threshold : u[r.dim] < r.threshold) return false;
    }
    if (chunk_in_buffer && kChunks[ix[2]] > kBuffs[ix[3]] * 1048576) return false;
    if (hole) {
      const double x = (u[hd0] - hc0) / hr0, y = (u[hd1] - hc1) / hr1;
      if (x * x + y * y < 1.0) return false;
    }
    return true;
  };
  auto value = [&](size_t a, size_t p, const std::vector<double>& u, size_t s) {
    const double sp = size_pos(inst.sizes[s]);
    double v = scale[s] * height[a * P + p] * std::exp(drift[a * P + p] * (sp - 0.5));
    for (size_t d = 0; d < kOrdered; ++d) {
      double peak = resp[d].base + resp[d].by_algo[a] + resp[d].by_proto[p] + resp[d].by_size * (sp - 0.5);
      for (const auto& it : inter) {
        if (it.to == d) peak += it.slope * (u[it.from] - 0.5);
      }
      const double w = u[d] < peak ? resp[d].left : resp[d].right;
      const double z = (u[d] - peak) / w;
      v *= std::pow(1.0 / (1.0 + z * z), resp[d].importance);
    }
    double bump = 1.0;
    for (const auto& b : bumps) {
      if (b.algo >= 0 && static_cast<size_t>(b.algo) != a) continue;
      if (b.proto >= 0 && static_cast<size_t>(b.proto) != p) continue;
      double d2 = 0;
      for (size_t d = 0; d < kOrdered; ++d) d2 += (u[d] - b.centre[d]) * (u[d] - b.centre[d]);
      bump += b.amplitude * std::exp(-d2 / (2 * b.radius * b.radius));
    }
    return v * std::max(bump, 0.2);
  };

  std::vector<FamilyRow> first, rest;
  std::vector<size_t> ix(kOrdered);
  std::vector<double> u(kOrdered);
  for (size_t a = 0; a < A; ++a) {
    for (size_t p = 0; p < P; ++p) {
      for (ix[0] = 0; ix[0] < kChannels.size(); ++ix[0]) {
        for (ix[1] = 0; ix[1] < kThreads.size(); ++ix[1]) {
          for (ix[2] = 0; ix[2] < kChunks.size(); ++ix[2]) {
            for (ix[3] = 0; ix[3] < kBuffs.size(); ++ix[3]) {
              for (size_t d = 0; d < kOrdered; ++d) u[d] = coord(d, ix[d]);
              if (!valid(a, p, ix, u)) {
                ++inst.invalid;
                continue;
              }
              const bool is_default = a == def_algo && p == def_proto && ix == def_index;
              for (size_t s = 0; s < inst.sizes.size(); ++s) {
                FamilyRow row;
                row.cells = {algos[a], kProtos[p], std::to_string(kChannels[ix[0]]), std::to_string(kThreads[ix[1]]),
                             std::to_string(kChunks[ix[2]]), std::to_string(kBuffs[ix[3]])};
                row.bytes = inst.sizes[s];
                row.value = value(a, p, u, s);
                row.std = inst.noise * row.value;
                (is_default ? first : rest).push_back(std::move(row));
              }
            }
          }
        }
      }
    }
  }
  inst.rows = std::move(first);
  inst.rows.insert(inst.rows.end(), std::make_move_iterator(rest.begin()), std::make_move_iterator(rest.end()));
  return inst;
}

std::string FamilyInstance::summary() const {
  std::string sz;
  for (uint64_t b : sizes) sz += (sz.empty() ? "" : ",") + std::to_string(b);
  return fmt::format("family-{} ({}): {} configs ({} left out as invalid), sizes {}, noise {:.1f}%, {}", seed,
                     class_name(cls), configs(), invalid, sz, 100 * noise, rugged ? "with bumps" : "no bumps");
}

std::string FamilyInstance::csv() const {
  std::string out;
  for (const auto& p : params) out += p + ",";
  out += "bytes,objective,objective_std\n";
  for (const auto& r : rows) {
    for (const auto& c : r.cells) out += c + ",";
    out += fmt::format("{},{:.6g},{:.4g}\n", r.bytes, r.value, r.std);
  }
  return out;
}

}  // namespace acceltune::bench
