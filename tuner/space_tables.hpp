// Private to the space file's reader (space_json.cpp): the tables a space file's params are read
// against (the native table of the kernel it names, the environment variables' tables) and the
// check of one param against its row. A space names params and narrows them; kind, unit, doc and
// default come from the row, and a space that states one differently is refused naming the field
// ("spaces/x.json: params.chunk.max: ...").
#pragma once

#include <optional>
#include <string>

#include "tuner/native_params.hpp"

namespace acceltune {

struct ParamRow {
  const NativeParam* row = nullptr;  // nullptr: no table describes the param; it states kind and default itself
  std::string owner;                 // for messages: "the table of kernel 'host-copy'", "the nccl table"
  std::string listing;               // the NAME of `acceltune spaces --params NAME`
};

class SpaceTables {
 public:
  // The tables for a space of `kernel`; a kernel this build lacks, or one that takes every param
  // as its own (replay), has no native table.
  explicit SpaceTables(const std::string& kernel);
  // The row of a param: its variable's when env-bound, else its name's in the kernel's table. An
  // input error at `path` ("file: params.algo") for a variable of a known library its table lacks.
  Expected<ParamRow> row_of(const std::string& name, const std::string& env, const std::string& path) const;

 private:
  std::string kernel_;
  std::optional<NativeTable> native_;
};

// The kind a param takes from its row when the space names none.
std::string kind_from_row(const NativeParam& row, const Json& j);
// An input error at `path`.kind when the space's kind cannot hold the row's values.
Status check_kind(const ParamRow& r, const std::string& kind, const std::string& path);
// Checks a param read from `j` against its row (unit, doc, every value in the domain) and takes
// the row's unit and doc. `path` is "file: params.NAME".
Status fit_to_row(const Json& j, const ParamRow& r, const std::string& path, Param& p);
// The index of the row's default among the param's values: a native param's default is its
// row's, which the narrowing must hold; an env-bound param's is the variable left unset (or the
// value the library then takes) unless the space names its own baseline in "default". A param
// narrowed to one value is pinned: that value is its default. nullopt: the caller reads the
// space's "default".
Expected<std::optional<size_t>> default_from_row(const Json& j, const ParamRow& r, const std::string& path,
                                                 const Param& p);

}  // namespace acceltune
