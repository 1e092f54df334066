// Parameter spaces: params with discrete domains, constraints over their names, enumeration of
// valid configs, canonical keys and neighbours.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tuner/value.hpp"

namespace acceltune {

enum class ParamKind { int_range, pow2, ordinal, categorical, boolean };

std::string_view to_string(ParamKind kind);
bool is_ordered(ParamKind kind);  // neighbours step along the axis (int, pow2, ordinal)

struct Param {
  std::string name;
  ParamKind kind = ParamKind::categorical;
  std::vector<Value> values;  // the whole domain, in axis order
  size_t default_index = 0;   // the library default
  std::string env;            // set this environment variable; empty: applied by the kernel
  std::string unit;
  std::string doc;
  // Variables a job needs set to run with a value, by the value's text ("ucx": the two
  // OMPI_MCA_pml_ucx_* of Debian's Open MPI). They travel with every export of that value.
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> needs;

  const Value& default_value() const { return values[default_index]; }
  std::optional<size_t> index_of(const Value& v) const;
};

// One assignment of every param of a space, as indices into each param's domain.
struct Config {
  std::vector<uint32_t> index;
  bool operator==(const Config&) const = default;
};

class ConstraintSet;

class Space {
 public:
  // Reads the JSON form README.md documents ("Space files"), each param against its table (the
  // kernel's native table, the environment variables' tables): kind, unit, doc and default come
  // from the table, and a space that contradicts it is refused naming the field. `source` names
  // the file in error messages and `base_dir` resolves relative paths the space refers to (a
  // replay landscape).
  static Expected<Space> from_json(const Json& doc, const std::string& source,
                                   const std::filesystem::path& base_dir);
  // Reads a study's stored definition() as it was stored, without the tables: it was read against
  // them when the study began, and a study made before a table changed still reads.
  static Expected<Space> from_definition(const Json& doc, const std::string& source,
                                         const std::filesystem::path& base_dir);
  // Loads a space file (from_json); JSON errors report file, line and column.
  static Expected<Space> load_file(const std::filesystem::path& path);

  const std::string& name() const { return name_; }
  const std::string& kernel() const { return kernel_; }
  const std::string& operation() const { return operation_; }
  const std::string& description() const { return description_; }
  const std::string& source() const { return source_; }
  const std::filesystem::path& base_dir() const { return base_dir_; }
  const std::vector<uint64_t>& sizes() const { return sizes_; }
  const std::vector<Param>& params() const { return params_; }
  const std::vector<std::string>& constraints() const { return constraints_; }
  // Fields this class does not interpret (kernel options, search defaults): the kernel reads them.
  const Json& extra() const { return extra_; }
  void set_extra(const std::string& key, Json value) { extra_[key] = std::move(value); }

  std::optional<size_t> param_index(std::string_view name) const;

  // Makes `v` the default of param `name` (trial 0 measures it), adding it to the domain where it
  // is absent (in axis order for the ordered kinds): a param that changes the host starts from
  // the host's current value. Only before any config of the space exists (a kernel's attach).
  // Returns whether the domain grew.
  Expected<bool> set_default_value(std::string_view name, const Value& v);

  // Restrict the space to configs a predicate accepts (a replay landscape holds only some
  // configs). `what` explains the restriction in messages.
  void set_membership(std::function<bool(const Config&)> member, std::string what);

  Config default_config() const;
  bool is_valid(const Config& c) const;
  // Why a config is invalid, for messages; empty when it is valid.
  std::string why_invalid(const Config& c) const;
  // The config itself when valid, else the closest valid one reached by one-index steps along
  // the ordered params (breadth first, at most `max_steps` away); none when there is none.
  std::optional<Config> nearest_valid(const Config& c, int max_steps = 6) const;

  // The product of the domain sizes, saturating at UINT64_MAX.
  uint64_t cartesian_size() const;
  // Mixed-radix index over the cartesian product (first param varies slowest).
  Config from_ordinal(uint64_t ordinal) const;
  uint64_t to_ordinal(const Config& c) const;
  // Calls fn on every valid config in ordinal order; fn returns false to stop.
  void for_each_valid(const std::function<bool(const Config&)>& fn) const;
  // The number of valid configs: exact up to kCountExactLimit configs in the cartesian product
  // (enumerated once, cached), estimated by sampling beyond.
  uint64_t count_valid() const;
  bool count_is_exact() const;
  static constexpr uint64_t kCountExactLimit = 20'000'000;

  // name=value pairs sorted by param name, joined by ','. Stable across param order in files.
  std::string key(const Config& c) const;
  Json config_to_json(const Config& c) const;
  // Reads {"name": value, ...}; every param must be present with a value of its domain.
  Expected<Config> config_from_json(const Json& j) const;
  // Applies NAME=VALUE overrides to a config (the text is matched against the domain).
  Status set_value(Config& c, const std::string& name, const std::string& text) const;
  const Value& value(const Config& c, size_t param) const {
    return params_[param].values[c.index[param]];
  }

  // Valid configs one step away: adjacent values on ordered axes, any other value on
  // categorical and bool axes.
  std::vector<Config> neighbours(const Config& c) const;
  // Each param mapped to [0,1] by its index on the axis (pow2 axes are thus on a log scale).
  std::vector<double> encode(const Config& c) const;

  // The normalised definition: what a study stores and what resume compares.
  Json definition() const;

 private:
  static Expected<Space> read(const Json& doc, const std::string& source, const std::filesystem::path& base_dir,
                              bool with_tables);
  Status compile();

  std::string name_, kernel_, operation_, description_, source_;
  std::filesystem::path base_dir_;
  std::vector<uint64_t> sizes_;
  std::vector<Param> params_;
  std::vector<std::string> constraints_;
  Json extra_ = Json::object();
  std::shared_ptr<ConstraintSet> compiled_;
  std::function<bool(const Config&)> member_;
  std::string member_what_;
  mutable std::optional<uint64_t> count_cache_;
  mutable bool count_exact_ = true;
};

// An env-bound param with this value leaves its variable unset, so the library makes its own
// choice: NCCL_ALGO, for one, has no value that means "NCCL decides".
inline constexpr std::string_view kUnsetEnvValue = "default";
inline bool unsets_env(const Value& v) {
  return std::holds_alternative<std::string>(v) && std::get<std::string>(v) == kUnsetEnvValue;
}
inline bool unsets_env(const Json& v) { return v.is_string() && v.get<std::string>() == kUnsetEnvValue; }

// Param names are identifiers (letters, digits, '_'), since constraints name them.
bool is_param_name(const std::string& s);

// Locates a JSON parse error: "line 3, column 14".
std::string json_error_position(const std::string& text, size_t byte_offset);

}  // namespace acceltune
