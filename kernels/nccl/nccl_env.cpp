// The NCCL_* variables spaces bind, one row each (tuner/env_params.hpp): built on every build,
// NCCL or not, so the nccl spaces are read against it anywhere and `acceltune spaces --params
// nccl` prints it. Names, domains and the values NCCL takes when a variable is unset follow
// NCCL 2.28's documentation and library; NCCL reads most of them once per process.
#include "tuner/env_params.hpp"

namespace acceltune {
namespace {

// One of NCCL's names, which it compares ignoring case.
NativeParam nccl_name(std::string var, std::vector<std::string> names, std::string doc) {
  NativeParam p = env_choice(std::move(var), std::move(names), "", std::move(doc));
  p.any_case = true;
  return p;
}

// A list of NCCL's names: "Ring,Tree", or "^NVLS" for all but.
NativeParam nccl_names(std::string var, std::vector<std::string> names, std::string doc) {
  NativeParam p = nccl_name(std::move(var), std::move(names), std::move(doc));
  p.list = true;
  return p;
}

NativeParam nccl_switch(std::string var, std::string doc) {
  return env_integer(std::move(var), 0, 1, "", "0", std::move(doc));
}

// Names NCCL matches against this host's own (interfaces, devices).
NativeParam nccl_host_names(std::string var, std::string doc) {
  NativeParam p = env_choice(std::move(var), {}, "", std::move(doc));
  p.domain = "names matched against this host's";
  return p;
}

NativeTable nccl_env_rows() {
  return {
      nccl_names("NCCL_ALGO", {"Ring", "Tree", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"},
                 "algorithms NCCL may choose from; NVLS needs NVSwitch, CollNet a SHARP network, PAT one rank "
                 "per node; broadcast and reduce have Ring only"),
      nccl_names("NCCL_PROTO", {"LL", "LL128", "Simple"}, "protocols NCCL may choose from"),
      [] {
        NativeParam p = env_integer("NCCL_NTHREADS", 64, 512, "threads", "", "threads per CTA (512 on recent GPUs "
                                    "when unset)");
        p.multiple_of = 64;
        return p;
      }(),
      env_integer("NCCL_BUFFSIZE", 4096, int64_t{1} << 30, "bytes", "4194304", "buffer per channel and peer"),
      env_integer("NCCL_P2P_NET_CHUNKSIZE", 1024, 64 << 20, "bytes", "131072", "P2P chunk over the network"),
      env_integer("NCCL_P2P_PCI_CHUNKSIZE", 1024, 64 << 20, "bytes", "131072", "P2P chunk over PCIe"),
      env_integer("NCCL_P2P_NVL_CHUNKSIZE", 1024, 64 << 20, "bytes", "524288", "P2P chunk over NVLink"),
      env_integer("NCCL_NCHANNELS_PER_PEER", 1, 32, "channels", "",
                  "channels per P2P peer; NCCL 2.28's library has no such variable (see "
                  "NCCL_MIN/MAX_P2P_NCHANNELS)"),
      env_integer("NCCL_NCHANNELS_PER_NET_PEER", 1, 32, "channels", "", "channels per network peer"),
      env_integer("NCCL_MIN_P2P_NCHANNELS", 1, 64, "channels", "1", "fewest channels P2P operations use"),
      env_integer("NCCL_MAX_P2P_NCHANNELS", 1, 64, "channels", "", "most channels P2P operations use"),
      env_integer("NCCL_MIN_NCHANNELS", 1, 64, "channels", "", "fewest channels (CTAs) collectives use"),
      env_integer("NCCL_MAX_NCHANNELS", 1, 64, "channels", "", "most channels (CTAs) collectives use"),
      env_integer("NCCL_MIN_CTAS", 1, 64, "CTAs", "", "fewest CTAs per collective"),
      env_integer("NCCL_MAX_CTAS", 1, 64, "CTAs", "", "most CTAs per collective"),
      env_integer("NCCL_NVLS_ENABLE", 0, 2, "", "", "NVLink SHARP: 0 off, 1 on, 2 where the system supports it"),
      env_integer("NCCL_NVLS_NCHANNELS", 1, 64, "channels", "", "channels of the NVLS algorithms"),
      env_integer("NCCL_IB_QPS_PER_CONNECTION", 1, 128, "queue pairs", "1",
                  "InfiniBand/RoCE queue pairs per connection"),
      env_integer("NCCL_IB_SPLIT_DATA_ON_QPS", 0, 1, "", "",
                  "1: each message split over the queue pairs; 0: messages round robin over them"),
      env_integer("NCCL_SOCKET_NTHREADS", 1, 16, "threads", "", "helper threads per socket connection"),
      env_integer("NCCL_NSOCKS_PERTHREAD", 1, 64, "sockets", "", "sockets per helper thread"),
      nccl_name("NCCL_NET_GDR_LEVEL", {"LOC", "PIX", "PXB", "PHB", "SYS"},
                 "how close NIC and GPU must be for GPUDirect RDMA"),
      env_integer("NCCL_NET_GDR_READ", 0, 1, "", "", "1: send from GPU memory with GPUDirect RDMA reads"),
      nccl_name("NCCL_P2P_LEVEL", {"LOC", "NVL", "PIX", "PXB", "PHB", "SYS"},
                 "how close two GPUs must be for the P2P transport"),
      nccl_switch("NCCL_P2P_DISABLE", "1: no P2P transport between GPUs"),
      nccl_switch("NCCL_SHM_DISABLE", "1: no shared-memory transport between processes"),
      nccl_switch("NCCL_IB_DISABLE", "1: no InfiniBand/RoCE; sockets instead"),
      env_integer("NCCL_CROSS_NIC", 0, 2, "", "2", "rings and trees over different NICs: 0 never, 1 always, 2 if faster"),
      nccl_host_names("NCCL_SOCKET_IFNAME", "interfaces for sockets (prefixes, ^ to exclude, = for exact)"),
      nccl_host_names("NCCL_IB_HCA", "InfiniBand/RoCE devices and ports (mlx5_0:1, ^ to exclude)"),
  };
}

}  // namespace

ACCELTUNE_REGISTER_ENV_TABLE("nccl", "NCCL", "NCCL_", nccl_env_rows());

}  // namespace acceltune
