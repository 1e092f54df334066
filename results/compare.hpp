// The comparison of studies of one space measured on different machines or hardware generations
// (read back by results/study_dir.hpp): per message size each study's default and best value, their
// gains, the gains of each study over the first, where the best configs differ, and
// how the hardware fingerprints differ. Used by `acceltune compare`, `acceltune report` and tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "results/study_dir.hpp"

namespace acceltune {

// The library-default trial (trial 0 normally), or null when it has not finished.
const Trial* default_trial(const StudyData& s);

// The fingerprint as compared: the probe's "fingerprint_fields" (the subset its id hashes) when it
// has one, else the whole fingerprint minus volatile fields (id, clocks, temperatures, power,
// load, times). `subset` says which.
Json comparable_fingerprint(const Json& study, bool* subset);
// Leaf fields of a JSON object by dotted path ("cpu.model", "nics[0].speed_mbps"); arrays of
// scalars are one field.
std::vector<std::pair<std::string, Json>> flatten_fields(const Json& j);

struct CompareStudy {
  std::string dir;
  std::string label;  // "#1", "#2", ...
  std::string space, kernel, operation;
  std::string fingerprint_id, host, cpu_model;
  int64_t logical_cores = 0, usable_cores = 0;
  int64_t trials = 0, trials_ok = 0;
  bool certified = false, finished = false;
  std::string created_at;
  // Whether the study's export was measured the way a job loads it (BestTable::delivery): "measured"
  // or "not verified", and why not.
  std::string delivery_state = "not verified", delivery_why, delivery_client;
  // The study's best against the ceiling of the link it crossed, on its own machine
  // (probe/links.hpp's Efficiency::to_json), so two generations are each judged by their own.
  Json efficiency = Json::object();
  std::string efficiency_text;  // Efficiency::short_text
};

// One study at one message size. Values are what the search measured (the default trial and the
// recommended config at this size); the certified ratio and its 95% interval come from the
// interleaved re-measurement when the study was certified; the delivered ratio and its interval
// from the export loaded the way a job loads it, when that was measured ("not verified" else).
struct CompareCell {
  std::optional<double> default_value, default_p10, default_p90;
  std::optional<double> best_value, best_p10, best_p90;
  std::optional<int64_t> best_trial;
  Json best_config = Json::object();
  std::optional<double> gain;  // best / default
  bool certified = false, significant = false;
  std::optional<double> certified_ratio, ci_low, ci_high;
  std::optional<Delivered> delivered;  // absent: not verified (CompareStudy::delivery_why says why)
  // Against the first study at the same size.
  std::optional<double> best_vs_first, default_vs_first;
};

struct ConfigDifference {
  uint64_t bytes = 0;
  std::string param;
  std::vector<Json> values;  // per study; null where the study's best has no such param
};

struct FieldDifference {
  std::string field;
  std::vector<Json> values;  // per study; null where absent
};

struct Comparison {
  std::vector<CompareStudy> studies;
  std::string unit;
  std::vector<uint64_t> sizes;                 // the sizes every study measured
  std::vector<std::vector<CompareCell>> cells;  // [size][study]
  // Sizes not shared by all, with the labels of the studies that have them.
  std::vector<std::pair<uint64_t, std::vector<std::string>>> other_sizes;
  std::vector<ConfigDifference> config_differences;
  std::vector<FieldDifference> fingerprint_differences;
  bool fingerprint_subset = false;  // compared the probes' fingerprint_fields
  // With fingerprint_fields: the other non-volatile fields that differ (usable cores, host name),
  // which do not change the id but may explain a difference.
  std::vector<FieldDifference> other_fingerprint_differences;
  std::vector<std::string> warnings;

  Json to_json() const;
};

// Refuses (an input error, exit code 2) studies of different kernels or with no size in common;
// other differences (space, workload, sizes, units, measurement settings) become warnings.
Expected<Comparison> compare_studies(const std::vector<StudyData>& studies);

// A param value as people read it: byte-valued params in 4K/1M form.
std::string show_param_value(const Json& v, const std::string& unit);
// A value with three significant digits ("91.4", "0.123", "1.23e+03" beyond).
std::string format_number(double v);

}  // namespace acceltune
