// A kernel's native params, declared once in a table: name, kind, domain, default, unit and one
// line of doc (UCX's config tables are the model). The table is the one place a native param is
// described: a space file is read against it (tuner/space_tables.hpp: kind, unit and doc come
// from it, values and bounds lie in its domain, the narrowing holds its default), make_kernel
// checks every value again before attach, a space that omits a param measures at its default,
// and `acceltune spaces --params KERNEL` prints it. The environment variables spaces bind have
// rows of the same shape (tuner/env_params.hpp) whose default is "unset". Integer domains are
// bounded so no arithmetic a kernel does on a value can overflow.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/space.hpp"
#include "tuner/value.hpp"

namespace acceltune {

enum class NativeKind { integer, number, choice, boolean };
std::string_view to_string(NativeKind kind);  // "integer", "number", "choice", "bool"

struct NativeParam {
  std::string name;
  NativeKind kind = NativeKind::integer;
  double min = 0, max = 0;           // integer, number: the closed domain
  int64_t multiple_of = 1;           // integer: values are multiples of this
  bool pow2 = false;                 // integer: values are powers of two
  std::vector<std::string> choices;  // choice: the names it takes; empty: any name, as `domain` says
  std::string domain;                // choice without fixed names: the domain in words
  Value fallback;                    // the value a space that omits the param measures at
  std::string unit;                  // "bytes", "threads", ...; empty for none
  std::string doc;                   // one line
  std::vector<std::string> words;    // integer: names it takes besides numbers ("auto", "inf")
  bool list = false;                 // choice: a comma-separated list of choices ("Ring,Tree")
  bool any_case = false;             // choice: names match whatever their case
  bool env = false;                  // an environment variable's row: its default is unset, values are text
  std::string unset_as;              // env: the value the library takes when the variable is unset ("auto")
};
using NativeTable = std::vector<NativeParam>;

NativeParam integer_param(std::string name, int64_t min, int64_t max, int64_t fallback, std::string unit,
                          std::string doc);
NativeParam number_param(std::string name, double min, double max, double fallback, std::string unit,
                         std::string doc);
NativeParam choice_param(std::string name, std::vector<std::string> choices, std::string fallback,
                         std::string doc);
NativeParam bool_param(std::string name, bool fallback, std::string doc);
// An environment variable's row: its default is unset (the library decides); `unset_as` names the
// value the library then takes where one exists ("auto", "8192"), empty where none does.
NativeParam env_integer(std::string var, int64_t min, int64_t max, std::string unit, std::string unset_as,
                        std::string doc);
NativeParam env_choice(std::string var, std::vector<std::string> choices, std::string unset_as, std::string doc);
// The default column of a row: the value, "unset" or "unset (auto)" for an env row.
std::string describe_default(const NativeParam& p);

// The row of a table by name, or nullptr.
const NativeParam* find_native(const NativeTable& table, std::string_view name);
// The domain in words: "1..1024", "multiples of 32 in 32..1024", "memcpy, stream, rep_movsb",
// "auto, inf or 0..1G".
std::string describe_domain(const NativeParam& p);
// Why a value is outside the param's domain; empty when it is inside. An env row also takes its
// values as text ("1048576", "Ring,Tree") and the space's unset value ("default").
std::string outside_domain(const NativeParam& p, const Value& v);
// Every native (not env-bound) value of the space checked against the table: an input error
// naming the file, the param, the value and the domain for the first outside it. Params the
// table lacks are left to the caller.
Status check_native_values(const NativeTable& table, const Space& space, const std::string& kernel);
// The table as an aligned text table with a header line, for `acceltune spaces --params`.
std::string format_native_table(const NativeTable& table);

// A kernel's native values for one config: the space's value where it lists the param, the
// table's default where it does not. Asking for a name the table lacks is a programming error
// (std::logic_error).
class NativeValues {
 public:
  NativeValues(const NativeTable& table, const Space& space, const Config& config);
  int64_t integer(std::string_view name) const;
  double number(std::string_view name) const;
  const std::string& choice(std::string_view name) const;
  bool boolean(std::string_view name) const;

 private:
  const Value& at(std::string_view name) const;
  std::map<std::string, Value, std::less<>> values_;
};

}  // namespace acceltune
