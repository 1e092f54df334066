// libacceltune: the C API of acceltune/loader.h over the project's own best-table code, so a job
// applies what `acceltune exec` would. It runs inside the job, so it sets variables and nothing
// else: it reads a few small regular files, loads no library, initialises no device, starts no
// thread, and checks only the fingerprint fields a job can read cheaply (loader_fields).
#include "acceltune/loader.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tuner/env_file.hpp"
#include "tuner/loader_fields.hpp"
#include "tuner/version.hpp"
#include "tuner/regular_file.hpp"
#include "tuner/space.hpp"

#define ACCELTUNE_API extern "C" __attribute__((visibility("default")))

namespace acceltune::loader {
namespace {

namespace fs = std::filesystem;

thread_local std::string t_error;
thread_local int t_applied = 0, t_kept = 0;

constexpr unsigned kKnownFlags = ACCELTUNE_OVERRIDE | ACCELTUNE_FORCE | ACCELTUNE_STRICT | ACCELTUNE_DRY_RUN;
constexpr const char* kPrefixes[] = {"NCCL_", "UCX_", "OMPI_MCA_", "MPIR_CVAR_"};
constexpr const char* kFingerprintTag = "# acceltune fingerprint:";
constexpr const char* kFieldsTag = "# acceltune fingerprint_fields:";

const Json& own_fields() {
  static std::once_flag once;
  static Json fields;
  std::call_once(once, [] {
    try {
      fields = loader_fields();
    } catch (...) {
      fields = Json::object();
    }
  });
  return fields;
}

const std::string& own_fields_text() {
  static const std::string text = own_fields().dump();
  return text;
}

struct Config {
  std::vector<std::pair<std::string, std::string>> vars;
  std::string fingerprint;  // the id, for messages; empty when the source carries none
  Json fields;              // loader_fields of the machine that measured it; null when absent
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

// The whole of a regular file (tuner/regular_file.hpp: a FIFO is refused before it could block).
int read_file(const fs::path& p, std::string* text) {
  std::string why;
  if (!read_regular_file(p.c_str(), *text, why)) {
    const bool kind = why.rfind("is ", 0) == 0;  // "is a FIFO": not a reading error, a wrong path
    return failure(ACCELTUNE_E_READ, kind ? fmt::format("{}: {}, where a file was expected", p.string(), why)
                                          : fmt::format("{}: cannot read: {}", p.string(), why));
  }
  return ACCELTUNE_OK;
}

// Which members of a JSON file to keep: keep(depth, top-level key, this key). The parser still
// reads the rest, but builds nothing for it (a study's files hold far more than the loader needs).
using Keep = bool (*)(int depth, const std::string& top, const std::string& key);

int read_json(const fs::path& p, Json* out, Keep keep) {
  std::string text;
  if (int rc = read_file(p, &text)) return rc;
  std::string top;
  Json::parser_callback_t filter = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (event != Json::parse_event_t::key) return true;
    const std::string& key = parsed.get_ref<const std::string&>();
    if (depth == 1) top = key;
    return keep(depth, top, key);
  };
  *out = Json::parse(text, filter, false);
  if (out->is_discarded() || !out->is_object()) {
    return failure(ACCELTUNE_E_FORMAT, fmt::format("{}: malformed JSON", p.string()));
  }
  return ACCELTUNE_OK;
}

// The first field where the recorded machine and this one differ, with both values.
std::string field_difference(const Json& recorded, const Json& here) {
  for (const auto& [key, value] : recorded.items()) {
    const Json mine = here.contains(key) ? here[key] : Json(nullptr);
    if (mine != value) return fmt::format("{}: measured on {}, this machine has {}", key, value.dump(), mine.dump());
  }
  for (const auto& [key, value] : here.items()) {
    if (!recorded.contains(key)) return fmt::format("{}: not recorded, this machine has {}", key, value.dump());
  }
  return "";
}

// A study's best.json, with the fingerprint from the study.json beside it.
int from_best(const fs::path& best_path, Config* c) {
  Json best;
  if (int rc = read_json(best_path, &best, [](int depth, const std::string& top, const std::string&) {
        return depth > 1 || top == "overall" || top == "export_config" || top == "env" || top == "plan";
      })) {
    return rc;
  }
  if (!best.contains("overall") || !best["overall"].is_object()) {
    return failure(ACCELTUNE_E_FORMAT, fmt::format("{}: not a best.json table: it lacks 'overall'", best_path.string()));
  }
  const Json& overall = best["overall"];
  if (!overall.contains("trial") || !overall["trial"].is_number()) {
    return failure(ACCELTUNE_E_FORMAT, fmt::format("{}: the study has no config that measured ok", best_path.string()));
  }
  // The plan's variables as `acceltune export --format env` writes them (tuner/plan.hpp), stored in
  // best.json because a job reads no space. Older tables: the export config's env-bound values.
  if (best.contains("plan") && best["plan"].is_object() && best["plan"].contains("env") &&
      best["plan"]["env"].is_array()) {
    for (const auto& kv : best["plan"]["env"]) {
      if (!kv.is_array() || kv.size() != 2 || !kv[0].is_string() || !kv[1].is_string()) {
        return failure(ACCELTUNE_E_FORMAT, fmt::format("{}: plan.env holds a malformed entry {}", best_path.string(), kv.dump()));
      }
      c->vars.emplace_back(kv[0].get<std::string>(), kv[1].get<std::string>());
    }
  }
  const Json config = best.contains("plan") ? Json::object()
                      : best.contains("export_config") ? best["export_config"]
                                                        : overall.value("config", Json::object());
  const Json env = best.value("env", Json::object());
  for (const auto& [param, var] : env.items()) {
    if (!config.contains(param) || !var.is_string()) continue;
    const Json& v = config[param];
    if (unsets_env(v)) continue;  // "default": the library decides, so the variable stays unset
    c->vars.emplace_back(var.get<std::string>(), v.is_string() ? v.get<std::string>() : v.dump());
  }
  const fs::path study_path = best_path.parent_path() / "study.json";
  struct stat st {};
  if (::lstat(study_path.c_str(), &st) == 0) {
    Json study;
    if (int rc = read_json(study_path, &study, [](int depth, const std::string& top, const std::string& key) {
          return top == "fingerprint" && (depth != 2 || key == "id" || key == "loader_fields");
        })) {
      return rc;
    }
    if (study.contains("fingerprint") && study["fingerprint"].is_object()) {
      const Json& fp = study["fingerprint"];
      if (fp.contains("id") && fp["id"].is_string()) c->fingerprint = fp["id"].get<std::string>();
      if (fp.contains("loader_fields") && fp["loader_fields"].is_object()) c->fields = fp["loader_fields"];
    }
  }
  return ACCELTUNE_OK;
}

// KEY=VALUE lines; the fingerprint from a "# acceltune fingerprint: ID" comment.
int from_env_file(const fs::path& p, Config* c) {
  std::string text;
  if (int rc = read_file(p, &text)) return rc;
  auto parsed = parse_env_text(text, p.string());
  if (!parsed) return failure(ACCELTUNE_E_FORMAT, parsed.error().message);
  for (const auto& [n, line] : parsed->comments) {
    if (line.rfind(kFieldsTag, 0) == 0) {
      c->fields = Json::parse(line.substr(std::strlen(kFieldsTag)), nullptr, false);
      if (c->fields.is_discarded() || !c->fields.is_object()) {
        return failure(ACCELTUNE_E_FORMAT, fmt::format("{}:{}: the fingerprint fields are not a JSON object", p.string(), n));
      }
    } else if (line.rfind(kFingerprintTag, 0) == 0) {
      std::string id = line.substr(std::strlen(kFingerprintTag));
      while (!id.empty() && id.front() == ' ') id.erase(0, 1);
      const size_t sp = id.find(' ');
      c->fingerprint = id.substr(0, sp);
    }
  }
  c->vars = std::move(parsed->vars);
  // A bundle's acceltune.env names its files where the bundle was written: read the ones beside it.
  const fs::path folder = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (is_bundle_dir(folder)) relocate_bundle_files(c->vars, folder);
  return ACCELTUNE_OK;
}

int load(const std::string& path, Config* c) {
  std::error_code ec;
  const fs::path p(path);
  if (!fs::exists(p, ec)) return failure(ACCELTUNE_E_READ, fmt::format("{}: no such file or directory", path));
  if (fs::is_directory(p, ec)) {
    // A bring-up bundle: its merged environment, never its studies' own plans (the merge may have
    // removed what one of them holds).
    if (is_bundle_dir(p)) return from_env_file(p / kBundleEnv, c);
    if (!fs::exists(p / "study.json", ec)) {
      return failure(ACCELTUNE_E_FORMAT,
                     fmt::format("{}: neither a study directory (no study.json) nor a bring-up bundle (no bringup.json)",
                                 path));
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
    if (c.fields.is_null()) {
      return failure(ACCELTUNE_E_FINGERPRINT,
                     fmt::format("{}: carries no hardware fingerprint fields{}, so it cannot be checked against this "
                                 "machine; export it again with this acceltune (--format env or nccl-conf) or pass "
                                 "ACCELTUNE_FORCE",
                                 path, c.fingerprint.empty() ? "" : " (only the id " + c.fingerprint + ")"));
    }
    const std::string diff = field_difference(c.fields, own_fields());
    if (!diff.empty()) {
      return failure(ACCELTUNE_E_FINGERPRINT,
                     fmt::format("{}: measured on other hardware{}: {}; search again here or pass ACCELTUNE_FORCE",
                                 path, c.fingerprint.empty() ? "" : " (" + c.fingerprint + ")", diff));
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
ACCELTUNE_API const char* acceltune_fingerprint(void) { return al::own_fields_text().c_str(); }
ACCELTUNE_API const char* acceltune_loader_version(void) {
  static const std::string v = acceltune::acceltune_version();
  return v.c_str();
}
