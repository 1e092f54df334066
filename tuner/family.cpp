// The family registry's queries (tuner/family.hpp).
#include "tuner/family.hpp"

#include <algorithm>

#include "tuner/space.hpp"

namespace acceltune {

bool NodeFacts::has(const std::string& key) const {
  return observed.is_object() && observed.contains(key) && observed[key].is_boolean() && observed[key].get<bool>();
}

std::string NodeFacts::text(const std::string& key) const {
  return observed.is_object() && observed.contains(key) && observed[key].is_string() ? observed[key].get<std::string>()
                                                                                   : "";
}

namespace {

std::string absent(int count, const char* what, const std::string& why) {
  if (count > 0) return "";
  return why.empty() ? std::string(what) : fmt::format("{}: {}", what, why);
}

}  // namespace

std::string NodeFacts::without_gpus() const { return absent(gpus, "no GPU", gpu_why); }

std::string NodeFacts::without_rdma() const { return absent(rdma_devices, "no RDMA device", rdma_why); }

std::function<FamilyRole(const NodeFacts&)> always_runs(std::string what, std::vector<FamilyStudy> studies) {
  return [what = std::move(what), studies = std::move(studies)](const NodeFacts&) {
    return FamilyRole{what, studies, ""};
  };
}

std::vector<std::pair<std::string, const FamilyInfo*>> families_in_order() {
  std::vector<std::pair<std::string, const FamilyInfo*>> out;
  for (const auto& [name, info] : FamilyRegistry::instance().entries()) out.emplace_back(name, &info);
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second->order < b.second->order; });
  return out;
}

std::string family_name_of_kernel(const std::string& kernel) {
  for (const auto& [name, info] : FamilyRegistry::instance().entries()) {
    if (std::find(info.kernels.begin(), info.kernels.end(), kernel) != info.kernels.end()) return name;
  }
  return "";
}

const FamilyInfo* family_of_kernel(const std::string& kernel) {
  const std::string name = family_name_of_kernel(kernel);
  return name.empty() ? nullptr : FamilyRegistry::instance().find(name);
}

std::string unit_of(const Space& space) {
  const FamilyInfo* f = family_of_kernel(space.kernel());
  const std::string unit = f && f->unit ? f->unit(space) : "";
  return unit.empty() ? "GB/s" : unit;
}

bool format_applies(const std::string& format, const std::string& kernel) {
  bool claimed = false;
  for (const auto& [name, info] : FamilyRegistry::instance().entries()) {
    if (std::find(info.exports.begin(), info.exports.end(), format) == info.exports.end()) continue;
    claimed = true;
    if (std::find(info.kernels.begin(), info.kernels.end(), kernel) != info.kernels.end()) return true;
  }
  return !claimed;
}

bool family_reads(const std::string& kernel, const EnvVars& plan, const std::string& var) {
  const FamilyInfo* f = family_of_kernel(kernel);
  if (!f) return false;
  for (const auto& p : f->env_prefixes) {
    if (var.rfind(p, 0) == 0) return true;
  }
  return f->also_reads && f->also_reads(plan, var);
}

}  // namespace acceltune
