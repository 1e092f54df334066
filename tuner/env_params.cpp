// The environment variables' tables: finding a variable's row by its library's prefix.
#include "tuner/env_params.hpp"

namespace acceltune {

std::optional<EnvRow> find_env_row(std::string_view var) {
  for (const auto& [name, table] : EnvTableRegistry::instance().entries()) {
    if (var.substr(0, table.prefix.size()) != table.prefix) continue;
    return EnvRow{name, find_native(table.rows, var)};
  }
  return std::nullopt;
}

}  // namespace acceltune
