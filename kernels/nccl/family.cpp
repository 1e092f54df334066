// The nccl family: NCCL collectives across a node's GPUs; per-size choices leave as the tuner
// plugin's table, job-wide ones as NCCL_* variables.
#include "tuner/family.hpp"

namespace acceltune {
namespace {

FamilyRole nccl_role(const NodeFacts& facts) {
  FamilyRole r{.what = "NCCL collectives across the node's GPUs", .skipped = facts.without_gpus()};
  if (r.skipped.empty() && facts.gpus < 2) {
    r.skipped = "one GPU: a one-rank communicator has no algorithm or protocol for NCCL to choose";
  }
  if (!r.skipped.empty()) return r;
  r.studies.push_back(FamilyStudy{"nccl", "nccl-allreduce", nullptr, {}, 2, 20});
  for (const char* s : {"nccl-allgather", "nccl-reduce-scatter", "nccl-broadcast", "nccl-reduce", "nccl-alltoall",
                        "nccl-sendrecv"}) {
    r.studies.push_back(FamilyStudy{"nccl", s, nullptr, {}, 1, 20});
  }
  return r;
}

}  // namespace
}  // namespace acceltune

ACCELTUNE_REGISTER(::acceltune::FamilyInfo, "nccl",
                   (::acceltune::FamilyInfo{
                       .what = "NCCL collectives: algorithm, protocol, channels, buffers",
                       .order = 60,
                       .kernels = {"nccl"},
                       .spaces = {"nccl-allreduce", "nccl-allgather", "nccl-reduce-scatter", "nccl-broadcast",
                                  "nccl-reduce", "nccl-alltoall", "nccl-sendrecv", "nccl-allreduce-2node"},
                       .bringup = ::acceltune::nccl_role,
                       .env_prefixes = {"NCCL_"},
                       .bundle_files = {{.name = "nccl-tuner.conf",
                                         .plan_format = "nccl-tuner",
                                         .when_empty = "the NCCL plans keep NCCL's own per-size choices: nothing to "
                                                       "load"}},
                       .links = {"gpu-peer"},
                       .exports = {"nccl-tuner"}}))
