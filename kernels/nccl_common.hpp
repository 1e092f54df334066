// What the nccl kernel knows without NCCL: its collectives, the bus bandwidth factors of
// nccl-tests, the sizes each collective moves, and which algorithm/protocol choices a GPU
// cannot run. Built on every machine so it is tested where no GPU is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace acceltune {

enum class NcclOp { allreduce, allgather, reduce_scatter, broadcast, reduce, alltoall, sendrecv };

std::optional<NcclOp> nccl_op_from_string(std::string_view name);
std::string_view to_string(NcclOp op);
const std::vector<std::string>& nccl_op_names();

// busbw = algbw x factor (nccl-tests): 2(n-1)/n allreduce; (n-1)/n allgather, reduce_scatter,
// alltoall; 1 broadcast, reduce, sendrecv.
double nccl_busbw_factor(NcclOp op, int nranks);

// The message size a collective is measured at: `bytes` rounded down to whole float elements,
// and to a multiple of nranks elements where the buffer is split between ranks. As in
// nccl-tests, `bytes` is the larger buffer: the gathered output of allgather, the input of
// reduce_scatter, the whole send buffer of alltoall.
uint64_t nccl_effective_bytes(NcclOp op, uint64_t bytes, int nranks);

// The algorithms and protocols NCCL_ALGO / NCCL_PROTO may name (one value each, or "default").
const std::vector<std::string>& nccl_algorithms();
const std::vector<std::string>& nccl_protocols();

struct NcclHardware {
  bool multicast = false;  // NVLink SHARP through NVSwitch, which NVLS needs
  int compute_major = 0;
  bool collnet = false;    // a CollNet (SHARP) network plugin
};

// Why this algorithm/protocol pair cannot run on this hardware for this collective; empty when
// it can. The static rules (which collectives have which algorithms) are in the spaces as
// constraints too; this adds what depends on the machine.
std::string nccl_hardware_excludes(NcclOp op, const std::string& algo, const std::string& proto,
                                   const NcclHardware& hw);

// Env-bound params cannot leave a variable unset, so "default" (or an empty value) stands for
// NCCL's own choice: this unsets every such NCCL_* variable of the process before NCCL reads them.
void nccl_unset_default_env();

}  // namespace acceltune
