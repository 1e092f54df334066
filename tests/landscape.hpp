// A small landscape made by the tests: a single known optimum, some configs missing.
#pragma once

#include <cmath>
#include <string>

#include <fmt/format.h>

namespace acceltune::test {

// Objective peaks at a=3, b=4, algo=tree (value 100); rows with a=5 and b=1 are absent.
inline double landscape_value(int a, int b, const std::string& algo) {
  const double base = algo == "tree" ? 100.0 : 70.0;
  return base - 6.0 * (a - 3) * (a - 3) - 5.0 * std::pow(std::log2(b) - 2.0, 2);
}

inline std::string landscape_csv(double noise_std = 0.0) {
  std::string csv = noise_std > 0 ? "algo,a,b,objective,objective_std\n" : "algo,a,b,objective\n";
  // The first row is the default config: algo=ring, a=1, b=1.
  for (const char* algo : {"ring", "tree"}) {
    for (int a = 1; a <= 5; ++a) {
      for (int b : {1, 2, 4, 8}) {
        if (a == 5 && b == 1) continue;
        csv += fmt::format("{},{},{},{}", algo, a, b, landscape_value(a, b, algo));
        if (noise_std > 0) csv += fmt::format(",{}", noise_std);
        csv += "\n";
      }
    }
  }
  return csv;
}

}  // namespace acceltune::test
