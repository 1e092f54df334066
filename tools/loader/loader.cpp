// libacceltune: the C API of acceltune/loader.h over the project's own best-table and
// fingerprint code, so a job applies exactly what `acceltune exec` would and checks the same
// fingerprint that `acceltune probe` prints.
#include "acceltune/loader.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tuner/best.hpp"
#include "tuner/fingerprint.hpp"

#define ACCELTUNE_API extern "C" __attribute__((visibility("default")))

namespace acceltune::loader {
namespace {

namespace fs = std::filesystem;

thread_local std::string t_error;
thread_local int t_applied = 0, t_kept = 0;

constexpr unsigned kKnownFlags = ACCELTUNE_OVERRIDE | ACCELTUNE_FORCE | ACCELTUNE_STRICT | ACCELTUNE_DRY_RUN;
constexpr const char* kPrefixes[] = {"NCCL_", "UCX_", "OMPI_MCA_", "MPIR_CVAR_"};
constexpr const char* kFingerprintTag = "# acceltune fingerprint:";

const std::string& own_fingerprint() {
  static std::once_flag once;
  static std::string id;
  std::call_once(once, [] {
    try {
      id = probe_fingerprint().value("id", "");
    } catch (...) {
      id.clear();
    }
  });
  return id;
}

struct Config {
  std::vector<std::pair<std::string, std::string>> vars;
  std::string fingerprint;  // empty when the source carries none
};

int failure(int code, std::string text) {
  t_error = "acceltune: " + std::move(text);
  return code;
}

bool known_prefix(const std::string& name) {
  for (const char* p : kPrefixes) {
    if (name.rfind(p, 0) == 0 && name.size() > std::strlen(p)) return true;
  }
  return false;
}

bool valid_name(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

int read_json(const fs::path& p, Json* out) {
  std::ifstream in(p);
  if (!in) return failure(ACCELTUNE_E_READ, fmt::format("{}: cannot read: {}", p.string(), std::strerror(errno)));
  *out = Json::parse(in, nullptr, false);
  if (out->is_discarded()) return failure(ACCELTUNE_E_FORMAT, fmt::format("{}: malformed JSON", p.string()));
  return ACCELTUNE_OK;
}

// A study's best.json, with the fingerprint from the study.json beside it.
int from_best(const fs::path& best_path, Config* c) {
  Json best;
  if (int rc = read_json(best_path, &best)) return rc;
  auto b = BestTable::from_json(best);
  if (!b) return failure(ACCELTUNE_E_FORMAT, fmt::format("{}: {}", best_path.string(), b.error().message));
  if (!b->overall_trial) {
    return failure(ACCELTUNE_E_FORMAT, fmt::format("{}: the study has no config that measured ok", best_path.string()));
  }
  for (const auto& [param, var] : b->env) {
    if (!b->export_config.contains(param)) continue;
    const Json& v = b->export_config[param];
    c->vars.emplace_back(var, v.is_string() ? v.get<std::string>() : v.dump());
  }
  const fs::path study_path = best_path.parent_path() / "study.json";
  std::error_code ec;
  if (fs::exists(study_path, ec)) {
    Json study;
    if (int rc = read_json(study_path, &study)) return rc;
    if (study.contains("fingerprint") && study["fingerprint"].is_object()) {
      c->fingerprint = study["fingerprint"].value("id", "");
    }
  }
  return ACCELTUNE_OK;
}

// KEY=VALUE lines; the fingerprint from a "# acceltune fingerprint: ID" comment.
int from_env_file(const fs::path& p, Config* c) {
  std::ifstream in(p);
  if (!in) return failure(ACCELTUNE_E_READ, fmt::format("{}: cannot read: {}", p.string(), std::strerror(errno)));
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    if (line.rfind(kFingerprintTag, 0) == 0) {
      std::string id = line.substr(std::strlen(kFingerprintTag));
      while (!id.empty() && id.front() == ' ') id.erase(0, 1);
      const size_t sp = id.find(' ');
      c->fingerprint = id.substr(0, sp);
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos || !valid_name(line.substr(0, eq))) {
      return failure(ACCELTUNE_E_FORMAT, fmt::format("{}:{}: expected KEY=VALUE, got '{}'", p.string(), n, line));
    }
    c->vars.emplace_back(line.substr(0, eq), line.substr(eq + 1));
  }
  return ACCELTUNE_OK;
}

int load(const std::string& path, Config* c) {
  std::error_code ec;
  const fs::path p(path);
  if (!fs::exists(p, ec)) return failure(ACCELTUNE_E_READ, fmt::format("{}: no such file or directory", path));
  if (fs::is_directory(p, ec)) {
    if (!fs::exists(p / "study.json", ec)) {
      return failure(ACCELTUNE_E_FORMAT, fmt::format("{}: not a study directory (no study.json)", path));
    }
    if (!fs::exists(p / "best.json", ec)) {
      return failure(ACCELTUNE_E_FORMAT,
                     fmt::format("{}: the study has no best.json yet; let the search finish or run 'acceltune best {}'",
                                 path, path));
    }
    return from_best(p / "best.json", c);
  }
  if (p.extension() == ".json") return from_best(p, c);
  return from_env_file(p, c);
}

int apply(const char* path, unsigned flags) {
  t_error.clear();
  t_applied = t_kept = 0;
  if (!path || !*path)
    return failure(ACCELTUNE_E_ARGUMENT, "acceltune_apply: path is empty; pass a study directory or an exported file");
  if (flags & ~kKnownFlags) {
    return failure(ACCELTUNE_E_ARGUMENT, fmt::format("acceltune_apply: unknown flags 0x{:x}", flags & ~kKnownFlags));
  }
  Config c;
  if (int rc = load(path, &c)) return rc;

  if (!(flags & ACCELTUNE_FORCE)) {
    const std::string& mine = own_fingerprint();
    if (c.fingerprint.empty()) {
      return failure(
          ACCELTUNE_E_FINGERPRINT,
          fmt::format("{}: carries no hardware fingerprint, so it cannot be checked against this machine ({}); "
                      "export it with --format nccl-conf or pass ACCELTUNE_FORCE",
                      path, mine));
    }
    if (c.fingerprint != mine) {
      return failure(ACCELTUNE_E_FINGERPRINT,
                     fmt::format("{}: measured on hardware {} but this machine is {}; search again here or pass "
                                 "ACCELTUNE_FORCE",
                                 path, c.fingerprint, mine));
    }
  }
  std::vector<std::pair<std::string, std::string>> wanted;
  for (auto& kv : c.vars) {
    if (known_prefix(kv.first)) {
      wanted.push_back(std::move(kv));
    } else if (flags & ACCELTUNE_STRICT) {
      return failure(ACCELTUNE_E_PREFIX,
                     fmt::format("{}: {} is not an NCCL_, UCX_, OMPI_MCA_ or MPIR_CVAR_ variable; the loader sets "
                                 "only those (use acceltune exec for others)",
                                 path, kv.first));
    }
  }
  int applied = 0, kept = 0;
  for (const auto& [k, v] : wanted) {
    if (!(flags & ACCELTUNE_OVERRIDE) && std::getenv(k.c_str()) != nullptr) {
      ++kept;
      continue;
    }
    if (!(flags & ACCELTUNE_DRY_RUN) && setenv(k.c_str(), v.c_str(), 1) != 0) {
      return failure(ACCELTUNE_E_SETENV, fmt::format("{}: setenv {}: {}", path, k, std::strerror(errno)));
    }
    ++applied;
  }
  t_applied = applied;
  t_kept = kept;
  return ACCELTUNE_OK;
}

}  // namespace
}  // namespace acceltune::loader

namespace al = acceltune::loader;

ACCELTUNE_API int acceltune_apply(const char* path, unsigned flags) {
  try {
    return al::apply(path, flags);
  } catch (const std::exception& e) {
    return al::failure(ACCELTUNE_E_FORMAT, std::string(path ? path : "(null)") + ": " + e.what());
  } catch (...) {
    return al::failure(ACCELTUNE_E_FORMAT, std::string(path ? path : "(null)") + ": unreadable configuration");
  }
}

ACCELTUNE_API int acceltune_applied_count(void) { return al::t_applied; }
ACCELTUNE_API int acceltune_kept_count(void) { return al::t_kept; }
ACCELTUNE_API const char* acceltune_last_error(void) { return al::t_error.c_str(); }
ACCELTUNE_API const char* acceltune_fingerprint(void) { return al::own_fingerprint().c_str(); }
ACCELTUNE_API const char* acceltune_loader_version(void) {
  static const std::string v = acceltune::acceltune_version();
  return v.c_str();
}
