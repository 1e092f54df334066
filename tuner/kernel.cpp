// The definitions behind tuner/kernel.hpp: objectives.
#include "tuner/kernel.hpp"

#include <algorithm>

namespace acceltune {

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

const NativeTable& Kernel::native_table() const {
  static const NativeTable none;
  return none;
}

std::vector<std::string> Kernel::native_params() const {
  std::vector<std::string> names;
  for (const auto& p : native_table()) names.push_back(p.name);
  return names;
}

Expected<std::unique_ptr<Kernel>> make_kernel(Space& space) {
  const KernelInfo* info = KernelRegistry::instance().find(space.kernel());
  if (!info) {
    std::vector<std::string> listed;
    for (const auto& [name, k] : KernelRegistry::instance().entries()) {
      if (k.listed) listed.push_back(name);
    }
    return input_error("{}: unknown kernel '{}' (this build has: {})", space.source(), space.kernel(),
                       join_names(listed));
  }
  std::unique_ptr<Kernel> kernel = info->make();
  const auto native = kernel->native_params();
  const bool any = std::find(native.begin(), native.end(), "*") != native.end();
  for (const auto& p : space.params()) {
    if (!p.env.empty() || any) continue;
    if (std::find(native.begin(), native.end(), p.name) == native.end()) {
      return input_error(
          "{}: param '{}' is neither bound to an environment variable (\"env\") nor applied by "
          "kernel '{}' (it applies: {})",
          space.source(), p.name, space.kernel(), join_names(native));
    }
  }
  ACCELTUNE_TRY(check_native_values(kernel->native_table(), space, space.kernel()));
  if (space.extra().contains("placement")) {
    const Json& pj = space.extra()["placement"];
    const auto where = kernel->placements();
    if (!pj.is_string()) return input_error("{}: field 'placement' must be a string", space.source());
    const std::string asked = pj.get<std::string>();
    if (std::find(where.begin(), where.end(), asked) == where.end()) {
      if (where.empty()) {
        return input_error("{}: kernel '{}' runs on this host only; drop --netns, --peer or the 'placement' field",
                           space.source(), space.kernel());
      }
      return input_error("{}: kernel '{}' has no placement '{}' (it has: {})", space.source(), space.kernel(), asked,
                         join_names(where));
    }
  }
  ACCELTUNE_TRY(kernel->attach(space));
  return kernel;
}

Expected<std::unique_ptr<Kernel>> make_kernel_to_tune(Space& space) {
  if (const KernelInfo* info = KernelRegistry::instance().find(space.kernel())) {
    const std::string why = info->make()->nothing_to_tune(space);
    if (!why.empty()) return input_error("{}: {}", space.source(), why);
  }
  ACCELTUNE_TRY_ASSIGN(std::unique_ptr<Kernel> kernel, make_kernel(space));
  const std::string why = kernel->nothing_to_tune(space);
  if (!why.empty()) return input_error("{}: {}", space.source(), why);
  return kernel;
}

}  // namespace acceltune
