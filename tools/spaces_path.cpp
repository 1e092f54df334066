// The definitions behind tools/spaces_path.hpp: finding spaces.
#include "tools/spaces_path.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>

#include "tuner/binary.hpp"
#include "tuner/family.hpp"
#include "tuner/kernel.hpp"

#ifndef ACCELTUNE_SPACES_DIR
#define ACCELTUNE_SPACES_DIR ""
#endif

namespace acceltune::cli {

namespace fs = std::filesystem;

std::vector<fs::path> space_dirs() {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("ACCELTUNE_SPACES_PATH")) {
    std::string s = env;
    size_t start = 0;
    while (start <= s.size()) {
      size_t colon = s.find(':', start);
      std::string d = s.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!d.empty()) dirs.emplace_back(d);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  // Beside the binary as installed (PREFIX/bin/acceltune, PREFIX/share/acceltune/spaces).
  const fs::path exe = running_program();
  if (exe.is_absolute()) dirs.push_back(exe.parent_path().parent_path() / "share" / "acceltune" / "spaces");
  if (std::string(ACCELTUNE_SPACES_DIR).size() > 0) dirs.emplace_back(ACCELTUNE_SPACES_DIR);
  return dirs;
}

std::vector<SpaceEntry> shipped_spaces() {
  std::vector<SpaceEntry> out;
  std::set<std::string> seen;
  for (const auto& dir : space_dirs()) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.path().extension() == ".json") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      const std::string name = f.stem().string();
      if (seen.insert(name).second) out.push_back({name, f});
    }
  }
  return out;
}

Expected<Space> resolve_space(const std::string& name, const Json& fields) {
  if (fields.is_null() || fields.empty()) return resolve_space(name);
  // The space's file: a shipped one by name, or a .json file (resolve_space says what is wrong).
  fs::path path;
  for (const auto& e : shipped_spaces()) {
    if (e.name == name) path = e.path;
  }
  std::error_code ec;
  if (path.empty() && fs::path(name).extension() == ".json" && fs::exists(name, ec)) path = name;
  if (path.empty()) {
    ACCELTUNE_TRY(resolve_space(name));  // its own error: unknown, missing, another file type
    return input_error("{}: only a shipped space or a .json space takes these fields ({})", name, fields.dump());
  }
  ACCELTUNE_TRY(Space::load_file(path));  // a malformed file says where, as without fields
  std::ifstream in(path);
  Json doc = Json::parse(in, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return input_error("{}: malformed JSON", path.string());
  for (const auto& [k, v] : fields.items()) {
    // --ranks: only a space whose kernel runs ranks states them.
    if (k == "ranks" && !doc.contains("ranks")) {
      return input_error("--ranks: space {} runs no ranks (kernel {} measures without them); drop --ranks", name,
                         doc.value("kernel", "?"));
    }
    doc[k] = v;
  }
  const fs::path base = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  return Space::from_json(doc, path.string(), base);
}

Expected<Space> resolve_space(const std::string& arg) {
  const fs::path p(arg);
  const std::string ext = p.extension().string();
  const bool looks_like_file = arg.find('/') != std::string::npos || !ext.empty();
  std::error_code ec;
  if (fs::exists(p, ec) || looks_like_file) {
    if (!fs::exists(p, ec)) return input_error("{}: no such space file", arg);
    if (ext == ".json") return Space::load_file(p);
    if (const SpaceLoader* loader = SpaceLoaderRegistry::instance().find(ext)) return loader->load(p);
    return input_error("{}: unknown space file type '{}' (use .json{})", arg, ext,
                       SpaceLoaderRegistry::instance().names().empty()
                           ? ""
                           : ", " + join_names(SpaceLoaderRegistry::instance().names()));
  }
  std::vector<std::string> names;
  for (const auto& e : shipped_spaces()) {
    if (e.name == arg) return Space::load_file(e.path);
    names.push_back(e.name);
  }
  // A family's name: its spaces.
  if (const FamilyInfo* f = FamilyRegistry::instance().find(arg); f && f->listed && !f->spaces.empty()) {
    return input_error("'{}' is a family, not a space: its spaces are {} (e.g. --space {})", arg, join_names(f->spaces),
                       f->spaces.front());
  }
  return input_error("unknown space '{}' (shipped: {}); give a shipped name or a .json or .csv file; "
                     "'acceltune spaces' lists them",
                     arg, names.empty() ? "none found" : join_names(names));
}

}  // namespace acceltune::cli
