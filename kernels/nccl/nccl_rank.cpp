// One rank of an nccl measurement: `acceltune __nccl-rank REQUEST_JSON`, one process per GPU.
// It joins the communicator named by the request's ncclUniqueId, connects back to the kernel's
// control channel and runs what it is told: set up buffers, run N collectives between two CUDA
// events, check the result. The communicator is non-blocking so every wait has a deadline;
// a rank that misses one aborts its communicator and reports the error instead of hanging.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "kernels/nccl/nccl_common.hpp"
#include "kernels/nccl/nccl_config.hpp"
#include "kernels/nccl/nccl_control.hpp"
#include "tuner/service.hpp"

namespace acceltune {
namespace {

// The value every rank sends: small integers, exact in float sums over many ranks, never 0.
float element(int rank, uint64_t i) { return static_cast<float>((i * 7 + static_cast<uint64_t>(rank) * 13) % 16 + 1); }

class Rank {
 public:
  Rank(const Json& req, int rank, int device) : req_(req), rank_(rank), device_(device) {
    nranks_ = req.at("nranks").get<int>();
    op_ = *nccl_op_from_string(req.at("op").get<std::string>());
    timeout_seconds_ = req.value("timeout_seconds", 5.0);
  }

  ~Rank() {
    if (comm_) {
      if (healthy_) {
        const ncclResult_t f = ncclCommFinalize(comm_);
        if (f == ncclSuccess || f == ncclInProgress) (void)wait_comm(timeout_seconds_);
        else healthy_ = false;
      }
      if (healthy_) ncclCommDestroy(comm_);
      else ncclCommAbort(comm_);
    }
    if (send_) cudaFree(send_);
    if (recv_) cudaFree(recv_);
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  Status init() {
    if (cudaSetDevice(device_) != cudaSuccess) return runtime_error("rank {}: cannot use GPU {}", rank_, device_);
    if (cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) != cudaSuccess ||
        cudaEventCreate(&start_) != cudaSuccess || cudaEventCreate(&stop_) != cudaSuccess) {
      return runtime_error("rank {}: cannot create a CUDA stream or events", rank_);
    }
    ncclUniqueId id{};
    const std::string hex = req_.at("id").get<std::string>();
    if (hex.size() != 2 * sizeof id.internal) return runtime_error("rank {}: malformed communicator id", rank_);
    for (size_t i = 0; i < sizeof id.internal; ++i) {
      id.internal[i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    int version = 0;
    ncclGetVersion(&version);
    const std::string unsupported = nccl_apply_config(req_.at("config"), version, config);
    if (!unsupported.empty()) return runtime_error("rank {}: {}", rank_, unsupported);
    config_fields_ = nccl_config_fields(config);
    const ncclResult_t r = ncclCommInitRankConfig(&comm_, nranks_, id, rank_, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
      comm_ = nullptr;
      return runtime_error("rank {}: ncclCommInitRankConfig: {}", rank_, ncclGetErrorString(r));
    }
    return wait_comm(req_.value("init_timeout_seconds", 8.0));
  }

  Json handle(const Json& cmd) {
    const std::string what = cmd.value("cmd", "");
    Status s;
    Json reply = Json::object();
    if (what == "setup") {
      s = setup(cmd.at("bytes").get<uint64_t>());
      reply["bytes"] = bytes_;
    } else if (what == "run") {
      auto t = run(cmd.at("runs").get<int64_t>());
      if (t) reply["seconds"] = *t;
      else s = t.error();
    } else if (what == "check") {
      reply["valid"] = true;
      auto e = check();
      if (!e) s = e.error();
      else if (!e->empty()) {
        reply["valid"] = false;
        reply["why"] = *e;
      }
    } else {
      s = runtime_error("rank {}: unknown command '{}'", rank_, what);
    }
    reply["ok"] = s.ok();
    if (!s.ok()) reply["error"] = s.error().message;
    return reply;
  }

  bool healthy() const { return healthy_; }
  // The ncclConfig_t fields passed to NCCL (after init).
  const Json& config_fields() const { return config_fields_; }

 private:
  // Waits until the communicator has no operation in progress, or aborts it at the deadline.
  Status wait_comm(double timeout_seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
    for (;;) {
      ncclResult_t state = ncclSuccess;
      const ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
      if (r != ncclSuccess) state = r;
      if (state == ncclSuccess) return {};
      if (state != ncclInProgress) {
        healthy_ = false;
        return runtime_error("rank {}: NCCL: {} ({})", rank_, ncclGetErrorString(state), ncclGetLastError(comm_));
      }
      if (std::chrono::steady_clock::now() > until) {
        healthy_ = false;
        return runtime_error("rank {}: NCCL did not finish within {} seconds", rank_, timeout_seconds);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  Status nccl(ncclResult_t r, const char* what) {
    if (r == ncclSuccess) return {};
    if (r == ncclInProgress) return wait_comm(timeout_seconds_);
    healthy_ = false;
    return runtime_error("rank {}: {}: {} ({})", rank_, what, ncclGetErrorString(r), ncclGetLastError(comm_));
  }

  Shares shares() const { return collective_shares(collective_row(op_), bytes_ / sizeof(float), nranks_); }
  uint64_t send_count() const { return shares().send; }
  uint64_t recv_count() const { return shares().recv; }

  Status setup(uint64_t bytes) {
    bytes_ = nccl_effective_bytes(op_, bytes, nranks_);
    if (bytes_ == 0) return runtime_error("rank {}: {} bytes is too small for {} over {} ranks", rank_, bytes, to_string(op_), nranks_);
    if (bytes_ > capacity_) {
      if (send_) cudaFree(send_);
      if (recv_) cudaFree(recv_);
      send_ = recv_ = nullptr;
      if (cudaMalloc(&send_, bytes_) != cudaSuccess || cudaMalloc(&recv_, bytes_) != cudaSuccess) {
        capacity_ = 0;
        return runtime_error("rank {}: cannot allocate 2 x {} bytes on GPU {}", rank_, bytes_, device_);
      }
      capacity_ = bytes_;
    }
    std::vector<float> host(send_count());
    for (uint64_t i = 0; i < host.size(); ++i) host[i] = element(rank_, i);
    if (cudaMemcpy(send_, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemset(recv_, 0, bytes_) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
      return runtime_error("rank {}: cannot initialise the buffers", rank_);
    }
    // One untimed collective: NCCL connects the peers an algorithm needs on its first use, so
    // the first timed run would otherwise include the connection setup.
    auto warm = run(1);
    if (!warm) return warm.error();
    return {};
  }

  Status enqueue() {
    const auto* s = static_cast<const float*>(send_);
    auto* r = static_cast<float*>(recv_);
    switch (op_) {
      case NcclOp::allreduce:
        return nccl(ncclAllReduce(s, r, recv_count(), ncclFloat, ncclSum, comm_, stream_), "ncclAllReduce");
      case NcclOp::allgather: return nccl(ncclAllGather(s, r, send_count(), ncclFloat, comm_, stream_), "ncclAllGather");
      case NcclOp::reduce_scatter:
        return nccl(ncclReduceScatter(s, r, recv_count(), ncclFloat, ncclSum, comm_, stream_), "ncclReduceScatter");
      case NcclOp::broadcast: return nccl(ncclBroadcast(s, r, recv_count(), ncclFloat, 0, comm_, stream_), "ncclBroadcast");
      case NcclOp::reduce: return nccl(ncclReduce(s, r, recv_count(), ncclFloat, ncclSum, 0, comm_, stream_), "ncclReduce");
      case NcclOp::alltoall: {
        const uint64_t c = send_count() / static_cast<uint64_t>(nranks_);
        ACCELTUNE_TRY(nccl(ncclGroupStart(), "ncclGroupStart"));
        for (int p = 0; p < nranks_; ++p) {
          const uint64_t off = static_cast<uint64_t>(p) * c;
          ACCELTUNE_TRY(nccl(ncclSend(s + off, c, ncclFloat, p, comm_, stream_), "ncclSend"));
          ACCELTUNE_TRY(nccl(ncclRecv(r + off, c, ncclFloat, p, comm_, stream_), "ncclRecv"));
        }
        return nccl(ncclGroupEnd(), "ncclGroupEnd");
      }
      case NcclOp::sendrecv: {
        const int next = (rank_ + 1) % nranks_, prev = (rank_ + nranks_ - 1) % nranks_;
        ACCELTUNE_TRY(nccl(ncclGroupStart(), "ncclGroupStart"));
        ACCELTUNE_TRY(nccl(ncclSend(s, send_count(), ncclFloat, next, comm_, stream_), "ncclSend"));
        ACCELTUNE_TRY(nccl(ncclRecv(r, recv_count(), ncclFloat, prev, comm_, stream_), "ncclRecv"));
        return nccl(ncclGroupEnd(), "ncclGroupEnd");
      }
    }
    return {};
  }

  Expected<double> run(int64_t runs) {
    if (cudaEventRecord(start_, stream_) != cudaSuccess) return runtime_error("rank {}: cudaEventRecord failed", rank_);
    for (int64_t i = 0; i < runs; ++i) ACCELTUNE_TRY(enqueue());
    if (cudaEventRecord(stop_, stream_) != cudaSuccess) return runtime_error("rank {}: cudaEventRecord failed", rank_);
    // A collective that never completes (a peer died, a bad protocol) shows as the stop event
    // never firing; NCCL's own errors show on the communicator. Both are polled.
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds_);
    for (;;) {
      const cudaError_t e = cudaEventQuery(stop_);
      if (e == cudaSuccess) break;
      if (e != cudaErrorNotReady) {
        healthy_ = false;
        return runtime_error("rank {}: CUDA: {}", rank_, cudaGetErrorString(e));
      }
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm_, &state);
      if (state != ncclSuccess && state != ncclInProgress) {
        healthy_ = false;
        return runtime_error("rank {}: NCCL: {} ({})", rank_, ncclGetErrorString(state), ncclGetLastError(comm_));
      }
      if (std::chrono::steady_clock::now() > until) {
        healthy_ = false;
        return runtime_error("rank {}: {} x {} did not complete within {} seconds", rank_, runs, to_string(op_),
                             timeout_seconds_);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(10));
    }
    float ms = 0;
    if (cudaEventElapsedTime(&ms, start_, stop_) != cudaSuccess) return runtime_error("rank {}: cudaEventElapsedTime failed", rank_);
    return static_cast<double>(ms) * 1e-3;
  }

  // Empty when the received data is what the collective must produce.
  Expected<std::string> check() {
    const CollectiveRow& row = collective_row(op_);
    if (row.root_only_receives && rank_ != 0) return std::string();
    std::vector<float> got(recv_count());
    if (cudaMemcpy(got.data(), recv_, got.size() * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) {
      return runtime_error("rank {}: cannot read the result back", rank_);
    }
    const uint64_t block = shares().block;
    for (uint64_t i = 0; i < got.size(); ++i) {
      const float want = expected_element(row, element, rank_, nranks_, i, block);
      if (got[i] != want) {
        return fmt::format("rank {}: element {} of {} is {}, expected {}", rank_, i, to_string(op_), got[i], want);
      }
    }
    return std::string();
  }

  Json req_;
  Json config_fields_ = Json::object();
  int rank_ = 0, nranks_ = 1, device_ = 0;
  NcclOp op_ = NcclOp::allreduce;
  double timeout_seconds_ = 5;
  ncclComm_t comm_ = nullptr;
  bool healthy_ = true;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  void* send_ = nullptr;
  void* recv_ = nullptr;
  uint64_t bytes_ = 0, capacity_ = 0;
};

int rank_main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "acceltune: __nccl-rank takes one argument, the request (JSON)\n");
    return 2;
  }
  const Json req = Json::parse(argv[2], nullptr, false);
  if (req.is_discarded() || !req.is_object() || !req.contains("op") || !nccl_op_from_string(req.value("op", ""))) {
    std::fprintf(stderr, "acceltune: __nccl-rank: malformed request\n");
    return 2;
  }
  nccl_unset_default_env();
  // Ranks started by a launcher learn who they are from it (Open MPI, MPICH/Hydra, Slurm).
  int rank = req.value("rank", -1);
  int device = req.value("device", -1);
  if (rank < 0) {
    const LauncherIdentity id = nccl_launcher_identity([](const char* n) -> const char* { return std::getenv(n); });
    if (id.rank < 0) {
      std::fprintf(stderr, "acceltune: __nccl-rank: no rank in the request and no launcher rank variable\n");
      return 2;
    }
    rank = id.rank;
    const int nranks = req.value("nranks", 0);
    if (id.world_size >= 0 && id.world_size != nranks) {
      std::fprintf(stderr,
                   "acceltune: rank %d: the launcher started %d ranks but the measurement is for %d; make the "
                   "launcher start {ranks} processes\n",
                   rank, id.world_size, nranks);
      return 1;
    }
    int visible = 0;
    if (cudaGetDeviceCount(&visible) != cudaSuccess) visible = 0;
    cudaGetLastError();
    device = nccl_device_for(id.local_rank, visible);
  }
  if (device < 0) device = 0;
  auto channel = join_control(req.at("control_host").get<std::string>(), req.at("control_port").get<int>(),
                                 req.value("init_timeout_seconds", 8.0));
  if (!channel) {
    std::fprintf(stderr, "acceltune: rank %d: %s\n", rank, channel.error().message.c_str());
    return 1;
  }
  Rank r(req, rank, device);
  const Status ready = r.init();
  Json hello = {{"rank", rank}, {"ok", ready.ok()}};
  int version = 0;
  ncclGetVersion(&version);
  hello["nccl_version"] = version;
  hello["nccl_config"] = r.config_fields();
  if (!ready.ok()) hello["error"] = ready.error().message;
  if (!channel->send(hello).ok() || !ready.ok()) return 1;
  for (;;) {
    // The kernel may spend a while between measurements (other trials in process); the rank
    // waits for it, but not forever, and goes when the channel closes.
    auto cmd = channel->receive(3600.0);
    if (!cmd) return 0;
    if (cmd->value("cmd", "") == "quit") return 0;
    const Json reply = r.handle(*cmd);
    if (!channel->send(reply).ok()) return 1;
    if (!r.healthy()) return 1;
  }
}

}  // namespace

ACCELTUNE_REGISTER(HiddenMode, "__nccl-rank", (HiddenMode{"one rank of an nccl measurement (one process per GPU)", rank_main}));

}  // namespace acceltune
