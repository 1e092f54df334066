// Finding spaces: a file path, or the name of a shipped space.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "tuner/space.hpp"

namespace acceltune::cli {

// The folders searched for shipped spaces, in order: $ACCELTUNE_SPACES_PATH (colon-separated),
// the installed share/acceltune/spaces beside the binary, the source tree of a build.
std::vector<std::filesystem::path> space_dirs();

struct SpaceEntry {
  std::string name;
  std::filesystem::path path;
};
// Shipped spaces by name; the first folder that has a name wins.
std::vector<SpaceEntry> shipped_spaces();

// A path to a .json or another registered extension (.csv), or a shipped space's name.
Expected<Space> resolve_space(const std::string& name_or_file);
// A shipped space with fields of its file replaced (bring-up's and a plain search's "ranks" and
// "sizes" of mpi-allreduce), read against the tables as a file is. Without fields: resolve_space.
Expected<Space> resolve_space(const std::string& name, const Json& fields);

}  // namespace acceltune::cli
