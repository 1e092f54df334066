// The definitions behind tuner/binary.hpp: the acceltune binary, for every place that starts it
// again in a hidden mode.
#include "tuner/binary.hpp"

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

std::string running_program() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("/proc/self/exe") : exe.string();
}

}  // namespace acceltune
