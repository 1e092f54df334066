// Name registries: backends add themselves at static-initialisation time, so adding a kernel,
// strategy, store or emitter means adding files, not editing a switch.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace acceltune {

template <typename Entry>
class Registry {
 public:
  static Registry& instance() {
    static Registry r;
    return r;
  }
  bool add(const std::string& name, Entry entry) {
    return entries_.emplace(name, std::move(entry)).second;
  }
  const Entry* find(const std::string& name) const {
    auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [k, v] : entries_) out.push_back(k);
    return out;
  }
  const std::map<std::string, Entry>& entries() const { return entries_; }

 private:
  std::map<std::string, Entry> entries_;
};

std::string join_names(const std::vector<std::string>& names);

}  // namespace acceltune

#define ACCELTUNE_REGISTRY_CONCAT_INNER(a, b) a##b
#define ACCELTUNE_REGISTRY_CONCAT(a, b) ACCELTUNE_REGISTRY_CONCAT_INNER(a, b)
// Registers `entry` under `name` in Registry<Type> when the object file is loaded.
#define ACCELTUNE_REGISTER(Type, name, entry)                                              \
  namespace {                                                                              \
  const bool ACCELTUNE_REGISTRY_CONCAT(acceltune_registered_, __LINE__) =                  \
      ::acceltune::Registry<Type>::instance().add(name, entry);                            \
  }
