// The definitions behind tuner/scoped_env.hpp.
#include "tuner/scoped_env.hpp"

#include <cstdlib>

namespace acceltune {

ScopedEnv::ScopedEnv(const std::string& name, const std::optional<std::string>& value) {
  if (value) set(name, *value);
  else unset(name);
}

ScopedEnv::~ScopedEnv() {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    if (it->second) setenv(it->first.c_str(), it->second->c_str(), 1);
    else unsetenv(it->first.c_str());
  }
}

void ScopedEnv::set(const std::string& name, const std::string& value) {
  const char* old = std::getenv(name.c_str());
  saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
  setenv(name.c_str(), value.c_str(), 1);
}

void ScopedEnv::unset(const std::string& name) {
  const char* old = std::getenv(name.c_str());
  saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
  unsetenv(name.c_str());
}

}  // namespace acceltune
