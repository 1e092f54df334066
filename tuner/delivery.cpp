// The definitions behind tuner/delivery.hpp: delivered gains.
#include "tuner/delivery.hpp"

#include <cstdlib>
#include <mutex>
#include <set>

extern char** environ;

namespace acceltune {
namespace {

std::mutex& hygiene_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::string>& hygiene_names() {
  static std::vector<std::string> names;
  return names;
}

}  // namespace

// The names acceltune set, listed in this variable too, so that an acceltune started by another
// (a worker, a test running the command line) knows them from the user's own settings.
constexpr const char* kHygieneList = "ACCELTUNE_HYGIENE";

bool listed(const std::string& list, const std::string& name) {
  return ("," + list + ",").find("," + name + ",") != std::string::npos;
}

void set_hygiene_env(const char* name, const char* value) {
  std::lock_guard<std::mutex> lock(hygiene_mutex());
  const char* list = std::getenv(kHygieneList);
  const std::string names = list ? list : "";
  if (std::getenv(name)) {
    // Set by an acceltune that started this one: still hygiene. Otherwise the user's own.
    if (listed(names, name)) hygiene_names().emplace_back(name);
    return;
  }
  if (::setenv(name, value, 0) != 0) return;
  hygiene_names().emplace_back(name);
  ::setenv(kHygieneList, (names.empty() ? std::string(name) : names + "," + name).c_str(), 1);
}

std::vector<std::string> hygiene_env_names() {
  std::lock_guard<std::mutex> lock(hygiene_mutex());
  std::vector<std::string> out = hygiene_names();
  out.emplace_back(kHygieneList);
  return out;
}

std::vector<std::string> job_environment(const Json& study, const DeliveryArm& arm) {
  std::set<std::string> drop;
  for (const auto& n : hygiene_env_names()) drop.insert(n);
  const Json space = study.is_object() ? study.value("space", Json::object()) : Json::object();
  for (const auto& p : space.value("params", Json::array())) {
    if (p.is_object() && p.contains("env") && p["env"].is_string()) drop.insert(p["env"].get<std::string>());
  }
  for (const auto& [k, v] : arm.env) drop.insert(k);
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq != std::string::npos && drop.count(kv.substr(0, eq))) continue;
    out.push_back(kv);
  }
  for (const auto& [k, v] : arm.env) out.push_back(k + "=" + v);
  return out;
}

}  // namespace acceltune
