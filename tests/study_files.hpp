// Writes small study directories with known values, through the same store and best table code
// that `acceltune search` uses, for the compare and report tests.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tuner/best.hpp"
#include "tuner/store.hpp"
#include "tuner/study.hpp"

namespace acceltune::test {

struct TrialSpec {
  Json config;                        // params not named keep the default
  std::map<uint64_t, double> values;  // per size; a missing size is measured as failed
  std::string error;                  // the error text of the failed sizes
};

struct StudySpec {
  std::string space_json;  // a space definition (JSON text)
  std::vector<uint64_t> sizes;
  Json fingerprint = Json::object();
  std::vector<TrialSpec> trials;  // the first is the library default
  bool write_best = true;         // false: a study still running
};

inline void write_study(const std::filesystem::path& dir, const StudySpec& spec) {
  auto space = Space::from_definition(Json::parse(spec.space_json), "test-space.json", dir);
  ASSERT_TRUE(space) << space.error().message;
  Workload w;
  w.kernel = space->kernel();
  w.operation = space->operation();
  w.sizes = spec.sizes;
  auto store = open_store("dir", dir.string());
  ASSERT_TRUE(store) << store.error().message;
  StudyOptions options;
  ASSERT_TRUE((*store)->create(make_study_record(*space, w, options, spec.fingerprint)).ok());
  std::vector<Trial> trials;
  for (size_t i = 0; i < spec.trials.size(); ++i) {
    const TrialSpec& ts = spec.trials[i];
    Json cfg = space->config_to_json(space->default_config());
    for (const auto& [k, v] : ts.config.items()) cfg[k] = v;
    auto c = space->config_from_json(cfg);
    ASSERT_TRUE(c) << c.error().message;
    Trial t;
    t.number = static_cast<int64_t>(i);
    t.config = *c;
    t.key = space->key(*c);
    t.started_at = "2026-01-02T03:04:05Z";
    t.cost_seconds = 0.5;
    for (uint64_t b : spec.sizes) {
      Measurement m;
      m.bytes = b;
      auto it = ts.values.find(b);
      if (it == ts.values.end()) {
        m.state = State::failed;
        m.error = ts.error.empty() ? "failed" : ts.error;
        m.value = m.value_p10 = m.value_p90 = NAN;
      } else {
        m.value = it->second;
        m.value_p10 = it->second * 0.9;
        m.value_p90 = it->second * 1.1;
      }
      t.measurements.push_back(m);
    }
    summarise(t);
    ASSERT_TRUE((*store)->append(t.to_json(*space)).ok());
    trials.push_back(std::move(t));
  }
  if (spec.write_best) {
    BestTable b = compute_best(*space, w, trials, "GB/s");
    ASSERT_TRUE((*store)->write_best(b.to_json()).ok());
  }
}

// A host-copy-like space with three params; `name` and the threads maximum vary between tests.
inline std::string tiny_space(const std::string& name, int max_threads = 4, const std::string& extra_method = "") {
  std::string methods = R"("memcpy", "stream")";
  if (!extra_method.empty()) methods += ", " + Json(extra_method).dump();
  return fmt::format(R"~({{
    "name": {}, "kernel": "host-copy", "operation": "copy", "sizes": ["64K", "1M"],
    "params": [
      {{"name": "threads", "kind": "int", "min": 1, "max": {}, "default": 1}},
      {{"name": "chunk", "kind": "pow2", "min": 4096, "max": 1048576, "default": 1048576, "unit": "bytes"}},
      {{"name": "method", "kind": "categorical", "values": [{}], "default": "memcpy"}}
    ]
  }})~",
                     Json(name).dump(), max_threads, methods);
}

}  // namespace acceltune::test
