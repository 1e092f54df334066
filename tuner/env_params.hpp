// The environment variables spaces bind, one table per library (NCCL_*, UCX_*, OMPI_MCA_*), each
// row shaped as a native param's (tuner/native_params.hpp: the variable's name, kind, domain,
// unit, doc) with the default "unset". A library's table registers from its family's folder on
// every build, its backend built or not, so every space that binds a variable is read against
// its row, and `acceltune spaces --params nccl` prints the table anywhere.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tuner/native_params.hpp"
#include "tuner/registry.hpp"

namespace acceltune {

struct EnvTable {
  std::string library;  // "NCCL", for listings
  std::string prefix;   // "NCCL_": every variable with it must have a row here
  NativeTable rows;
};
using EnvTableRegistry = Registry<EnvTable>;  // by name: "nccl", "ucx", "openmpi"

struct EnvRow {
  std::string table;                 // the registered name of the table whose prefix the variable has
  const NativeParam* row = nullptr;  // its row; nullptr when that table lacks it
};
// The row of an environment variable; nullopt when no table claims its prefix (the variable is
// not described anywhere, and a space may bind it as it likes).
std::optional<EnvRow> find_env_row(std::string_view var);

}  // namespace acceltune

// Registers a library's variables under `name` (`acceltune spaces --params NAME`).
#define ACCELTUNE_REGISTER_ENV_TABLE(name, library, prefix, rows) \
  ACCELTUNE_REGISTER(::acceltune::EnvTable, name, (::acceltune::EnvTable{library, prefix, rows}))
