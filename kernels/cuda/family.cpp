// The cuda family: copies between host and GPU memory, within a GPU and between GPUs.
#include "tuner/family.hpp"
#include "probe/fingerprint.hpp"

namespace acceltune {
namespace {

FamilyRole cuda_role(const NodeFacts& facts) {
  FamilyRole r{.what = "CUDA copies host to device, device to host, device to device", .skipped = facts.without_gpus()};
  if (!r.skipped.empty()) return r;
  for (const char* s : {"cuda-copy", "cuda-copy-d2h", "cuda-copy-d2d"}) r.studies.push_back(FamilyStudy{"cuda", s});
  if (facts.gpus >= 2) r.studies.push_back(FamilyStudy{"cuda", "cuda-copy-peer"});
  return r;
}

// Per GPU: name, compute capability, memory, maximum PCIe generation and width, NVLink links.
Json gpus_fingerprint(const Json& probe) {
  Json gpus = Json::array();
  const Json list = field_of(probe, "gpus");
  for (const auto& g : list.is_array() ? list : Json::array()) {
    const Json mem = field_of(g, "memory_bytes");
    gpus.push_back(Json{{"name", field_of(g, "name")},
                        {"compute_capability", field_of(g, "compute_capability")},
                        {"memory_mib", mem.is_number() ? Json(mem.get<uint64_t>() >> 20) : Json(nullptr)},
                        {"pcie_max_gen", field_of(field_of(g, "pcie"), "max_gen")},
                        {"pcie_max_width", field_of(field_of(g, "pcie"), "max_width")},
                        {"nvlinks", field_of(g, "nvlinks")}});
  }
  return gpus;
}

}  // namespace
}  // namespace acceltune

ACCELTUNE_REGISTER(::acceltune::FamilyInfo, "cuda",
                   (::acceltune::FamilyInfo{.what = "CUDA copies: engine, streams, chunking, pinned memory",
                                            .order = 50,
                                            .kernels = {"cuda-copy"},
                                            .spaces = {"cuda-copy", "cuda-copy-d2h", "cuda-copy-d2d", "cuda-copy-peer"},
                                            .bringup = ::acceltune::cuda_role,
                                            .links = {"pcie", "gpu-memory", "gpu-peer"},
                                            .fingerprint = {"gpus"}}))
ACCELTUNE_REGISTER(::acceltune::FingerprintField, "gpus",
                   (::acceltune::FingerprintField{"GPUs: model, compute capability, memory, PCIe, NVLink", 30,
                                                  ::acceltune::gpus_fingerprint}))
