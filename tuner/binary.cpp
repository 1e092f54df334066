// The definitions behind tuner/binary.hpp: the acceltune binary, for every place that starts it
// again in a hidden mode.
#include "tuner/binary.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

namespace acceltune {
namespace {

std::mutex& binary_mutex() {
  static std::mutex m;
  return m;
}

std::string& binary_path() {
  static std::string path;
  return path;
}

}  // namespace

void set_acceltune_binary(std::string path) {
  std::lock_guard<std::mutex> lock(binary_mutex());
  binary_path() = std::move(path);
}

Expected<std::string> acceltune_binary() {
  std::lock_guard<std::mutex> lock(binary_mutex());
  if (binary_path().empty()) {
    return runtime_error("the acceltune binary is not set in this program, so it cannot start the processes "
                         "this measurement needs (a program that embeds the kernels calls set_acceltune_binary)");
  }
  return binary_path();
}

Expected<std::string> companion_binary(const std::string& name, const std::string& env_var, const std::string& what) {
  if (const char* c = std::getenv(env_var.c_str()); c && *c) {
    if (::access(c, X_OK) != 0) {
      return runtime_error("acceltune verify: {} names '{}', which is not an executable; point it at the built {} "
                           "or unset it",
                           env_var, c, name);
    }
    return std::string(c);
  }
  auto exe = acceltune_binary();
  if (!exe) {
    return runtime_error("acceltune verify: cannot find {} beside the acceltune binary: {}; set {} to its path", name,
                         exe.error().message, env_var);
  }
  const std::filesystem::path beside = std::filesystem::path(*exe).parent_path() / name;
  if (::access(beside.c_str(), X_OK) != 0) {
    return runtime_error("acceltune verify: {} {} is not beside the acceltune binary ({}); build the target {} or set "
                         "{} to its path",
                         what, name, beside.string(), name, env_var);
  }
  return beside.string();
}

std::string running_program() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("/proc/self/exe") : exe.string();
}

}  // namespace acceltune
