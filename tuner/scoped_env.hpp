// Environment variables of this process set for a scope and put back after, as they were: the
// runner's per-process params around an in-process trial, and tests that play a user's shell.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace acceltune {

class ScopedEnv {
 public:
  ScopedEnv() = default;
  // One variable for the scope: set to `value`, or unset with nullopt.
  ScopedEnv(const std::string& name, const std::optional<std::string>& value);
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv();  // restores every variable, the last changed first
  void set(const std::string& name, const std::string& value);
  void unset(const std::string& name);

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace acceltune
