// replay: a recorded landscape as an objective. A CSV holds one column per param, a column
// `objective` (higher is better) and optionally `objective_std`; configs absent from the file
// are invalid, and each reported value gets Gaussian noise of objective_std drawn from the
// study's seed. Strategies can thus be compared on recorded data, cheaply and repeatably.
// An optional column `bytes` makes the landscape sized: one row per config and message size,
// the sizes become the workload's, and a config is valid when it has a row at every size.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "kernels/shared/csv.hpp"
#include "tuner/kernel.hpp"
#include "tuner/rng.hpp"

namespace acceltune {
namespace {

namespace fs = std::filesystem;

constexpr const char* kObjective = "objective";
constexpr const char* kObjectiveStd = "objective_std";
constexpr const char* kBytes = "bytes";

struct Columns {
  size_t objective = SIZE_MAX, objective_std = SIZE_MAX, bytes = SIZE_MAX;
  bool is_param(size_t i) const { return i != objective && i != objective_std && i != bytes; }
};

Expected<Columns> find_columns(const CsvTable& t, const fs::path& path) {
  Columns c;
  for (size_t i = 0; i < t.header.size(); ++i) {
    if (t.header[i] == kObjective) c.objective = i;
    if (t.header[i] == kObjectiveStd) c.objective_std = i;
    if (t.header[i] == kBytes) c.bytes = i;
  }
  if (c.objective == SIZE_MAX) {
    return input_error("{}: no '{}' column; a landscape has one column per param and a column '{}' "
                       "(higher is better), optionally '{}'",
                       path.string(), kObjective, kObjective, kObjectiveStd);
  }
  for (size_t r = 0; r < t.rows.size(); ++r) {
    double x = 0;
    if (!parse_number(t.rows[r][c.objective], x) || !std::isfinite(x)) {
      return input_error("{}:{}: objective '{}' is not a number", path.string(), t.row_lines[r],
                         t.rows[r][c.objective]);
    }
    if (c.objective_std != SIZE_MAX && (!parse_number(t.rows[r][c.objective_std], x) || !(x >= 0))) {
      return input_error("{}:{}: objective_std '{}' is not a non-negative number", path.string(),
                         t.row_lines[r], t.rows[r][c.objective_std]);
    }
    if (c.bytes != SIZE_MAX && (!parse_number(t.rows[r][c.bytes], x) || !(x >= 0) || x != std::floor(x))) {
      return input_error("{}:{}: bytes '{}' is not a whole number of bytes", path.string(), t.row_lines[r],
                         t.rows[r][c.bytes]);
    }
  }
  if (t.rows.empty()) return input_error("{}: the landscape has a header but no rows", path.string());
  return c;
}

// The space a landscape implies: numeric columns ordinal, the others categorical; the first
// row is the default config.
Expected<Space> load_landscape_space(const fs::path& path) {
  ACCELTUNE_TRY_ASSIGN(CsvTable t, read_csv_file(path));
  ACCELTUNE_TRY_ASSIGN(Columns cols, find_columns(t, path));
  Json params = Json::array();
  for (size_t i = 0; i < t.header.size(); ++i) {
    if (!cols.is_param(i)) continue;
    const std::string& name = t.header[i];
    if (!is_param_name(name)) {
      return input_error("{}: column {} ('{}') is not a usable param name (letters, digits, '_')",
                         path.string(), i + 1, name);
    }
    bool numeric = true, integral = true;
    for (const auto& row : t.rows) {
      double x = 0;
      if (!parse_number(row[i], x)) {
        numeric = false;
        break;
      }
      if (x != std::floor(x) || std::abs(x) > 9e15) integral = false;
    }
    Json p = Json::object();
    p["name"] = name;
    if (numeric) {
      std::set<double> values;
      for (const auto& row : t.rows) {
        double x = 0;
        parse_number(row[i], x);
        values.insert(x);
      }
      Json vals = Json::array();
      for (double x : values) {
        if (integral) vals.push_back(static_cast<int64_t>(x));
        else vals.push_back(x);
      }
      double d = 0;
      parse_number(t.rows[0][i], d);
      p["kind"] = "ordinal";
      p["values"] = vals;
      p["default"] = integral ? Json(static_cast<int64_t>(d)) : Json(d);
    } else {
      Json vals = Json::array();
      std::set<std::string> seen;
      for (const auto& row : t.rows) {
        if (seen.insert(row[i]).second) vals.push_back(row[i]);
      }
      p["kind"] = "categorical";
      p["values"] = vals;
      p["default"] = t.rows[0][i];
    }
    params.push_back(p);
  }
  if (params.empty()) return input_error("{}: the landscape has no param columns", path.string());
  Json doc = Json::object();
  doc["name"] = path.stem().string();
  doc["kernel"] = "replay";
  doc["operation"] = "replay";
  doc["description"] = fmt::format("landscape {}", path.filename().string());
  doc["params"] = params;
  doc["landscape"] = path.filename().string();
  if (cols.bytes != SIZE_MAX) {
    std::set<uint64_t> sizes;
    for (const auto& row : t.rows) {
      double x = 0;
      parse_number(row[cols.bytes], x);
      sizes.insert(static_cast<uint64_t>(x));
    }
    doc["sizes"] = Json(std::vector<uint64_t>(sizes.begin(), sizes.end()));
  }
  fs::path base = path.parent_path();
  if (base.empty()) base = ".";
  return Space::from_json(doc, path.string(), base);
}

std::optional<size_t> cell_index(const Param& p, const std::string& cell) {
  if (p.kind == ParamKind::categorical) return p.index_of(Value(cell));
  if (p.kind == ParamKind::boolean) {
    if (cell == "true" || cell == "1") return 1;
    if (cell == "false" || cell == "0") return 0;
    return std::nullopt;
  }
  double x = 0;
  if (!parse_number(cell, x)) return std::nullopt;
  return p.index_of(Value(x));
}

class Replay final : public Kernel {
 public:
  std::vector<std::string> native_params() const override { return {"*"}; }
  std::string unit() const override { return unit_; }
  bool sized() const override { return sized_; }

  Status attach(Space& space) override {
    if (!space.extra().contains("landscape") || !space.extra()["landscape"].is_string()) {
      return input_error("{}: kernel 'replay' needs a string field 'landscape' naming the CSV file",
                         space.source());
    }
    if (space.extra().contains("unit") && space.extra()["unit"].is_string()) {
      unit_ = space.extra()["unit"].get<std::string>();
    }
    fs::path path = space.extra()["landscape"].get<std::string>();
    if (path.is_relative()) path = space.base_dir() / path;
    std::string text;
    ACCELTUNE_TRY_ASSIGN(CsvTable t, read_csv_file(path, &text));
    ACCELTUNE_TRY_ASSIGN(Columns cols, find_columns(t, path));
    std::vector<size_t> column_of(space.params().size(), SIZE_MAX);
    for (size_t i = 0; i < t.header.size(); ++i) {
      if (!cols.is_param(i)) continue;
      auto k = space.param_index(t.header[i]);
      if (!k) {
        return input_error("{}: column '{}' is not a param of space '{}'", path.string(), t.header[i], space.name());
      }
      column_of[*k] = i;
    }
    for (size_t k = 0; k < space.params().size(); ++k) {
      if (column_of[k] == SIZE_MAX) {
        return input_error("{}: no column for param '{}' of space '{}'", path.string(), space.params()[k].name,
                           space.name());
      }
    }
    rows_ = std::make_shared<RowMap>();
    std::set<uint64_t> sizes;
    for (size_t r = 0; r < t.rows.size(); ++r) {
      Config c;
      c.index.resize(space.params().size());
      for (size_t k = 0; k < space.params().size(); ++k) {
        const std::string& cell = t.rows[r][column_of[k]];
        auto idx = cell_index(space.params()[k], cell);
        if (!idx) {
          return input_error("{}:{}: '{}' is not in the domain of param '{}'", path.string(), t.row_lines[r], cell,
                             space.params()[k].name);
        }
        c.index[k] = static_cast<uint32_t>(*idx);
      }
      Row row;
      parse_number(t.rows[r][cols.objective], row.objective);
      if (cols.objective_std != SIZE_MAX) parse_number(t.rows[r][cols.objective_std], row.std);
      uint64_t bytes = 0;
      if (cols.bytes != SIZE_MAX) {
        double x = 0;
        parse_number(t.rows[r][cols.bytes], x);
        bytes = static_cast<uint64_t>(x);
      }
      if (!(*rows_)[space.to_ordinal(c)].emplace(bytes, row).second) {
        return input_error("{}:{}: this config appears on an earlier row too{}", path.string(), t.row_lines[r],
                           cols.bytes != SIZE_MAX ? " at this size" : "");
      }
      sizes.insert(bytes);
    }
    sized_ = cols.bytes != SIZE_MAX;
    // A sized landscape: a config is measurable when it has a row at every size.
    for (auto it = rows_->begin(); it != rows_->end();) {
      it = it->second.size() == sizes.size() ? std::next(it) : rows_->erase(it);
    }
    if (!rows_->count(space.to_ordinal(space.default_config()))) {
      return input_error("{}: the default config ({}) is not in the landscape; trial 0 measures it, so add "
                         "its row or change the defaults",
                         path.string(), space.key(space.default_config()));
    }
    // The predicate owns what it reads, so it stays valid however the space is copied.
    std::vector<uint64_t> radix;
    for (const auto& p : space.params()) radix.push_back(p.values.size());
    space.set_membership(
        [rows = rows_, radix = std::move(radix)](const Config& c) {
          uint64_t o = 0;
          for (size_t k = 0; k < radix.size(); ++k) o = o * radix[k] + c.index[k];
          return rows->count(o) > 0;
        },
        "not in the landscape");
    space.set_extra("landscape_hash", fmt::format("{:016x}", hash_combine(0, text)));
    return {};
  }

  Measurement measure(const Space& space, const Config& config, uint64_t bytes, const MeasureSettings& settings,
                      const MeasureContext& ctx) override {
    Measurement m;
    m.bytes = bytes;
    auto found = rows_->find(space.to_ordinal(config));
    if (found == rows_->end()) {
      m.state = State::invalid;
      m.error = "config is not in the landscape";
      return m;
    }
    auto it = found->second.find(sized_ ? bytes : 0);
    if (it == found->second.end()) {
      m.state = State::invalid;
      m.error = fmt::format("the landscape has no row at {} bytes", bytes);
      return m;
    }
    const std::string key = space.key(config);
    const uint64_t draw = draws_[sized_ ? fmt::format("{}@{}", key, bytes) : key]++;
    // Noise depends on the seed, the config and how often it was drawn: reproducible for a
    // seed, independent between repeated measurements of one config.
    Rng rng(hash_combine(ctx.seed, sized_ ? fmt::format("{}@{}#{}", key, bytes, draw) : fmt::format("{}#{}", key, draw)));
    // Less effort means fewer repetitions: the noise of their median grows as 1/sqrt(effort).
    const double effort = std::clamp(settings.effort, 1e-3, 1.0);
    const double v = it->second.objective + it->second.std / std::sqrt(effort) * rng.normal();
    m.value = m.value_p10 = m.value_p90 = v;
    m.median_seconds = m.p10_seconds = m.p90_seconds = std::nan("");
    m.ci_low_seconds = m.ci_high_seconds = m.rel_halfwidth = std::nan("");
    if (!std::isfinite(v)) {
      m.state = State::invalid;
      m.error = "objective is not finite";
    }
    return m;
  }

 private:
  struct Row {
    double objective = 0, std = 0;
  };
  // config ordinal -> size (0 when unsized) -> row
  using RowMap = std::unordered_map<uint64_t, std::map<uint64_t, Row>>;
  std::shared_ptr<RowMap> rows_ = std::make_shared<RowMap>();
  bool sized_ = false;
  std::unordered_map<std::string, uint64_t> draws_;
  std::string unit_ = "objective";
};

}  // namespace

ACCELTUNE_REGISTER_KERNEL("replay", "a recorded landscape (CSV) as the objective, with seeded noise", Replay)
ACCELTUNE_REGISTER(SpaceLoader, ".csv", (SpaceLoader{"a landscape for the replay kernel", load_landscape_space}))

}  // namespace acceltune
