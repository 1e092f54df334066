// The UCX_* variables spaces bind, one row each (tuner/env_params.hpp): built on every build, UCX
// or not, so the ucx spaces are read against it anywhere and `acceltune spaces --params ucx`
// prints it. Names, domains and the values UCX takes when a variable is unset follow
// `ucx_info -c -f` of UCX 1.13; UCX reads them at ucp_init, once per process.
#include "tuner/env_params.hpp"

namespace acceltune {
namespace {

// A size in bytes, "auto" (UCX decides) or "inf", as UCX's memory units read them.
NativeParam ucx_threshold(std::string var, std::string doc) {
  NativeParam p = env_integer(std::move(var), 0, int64_t{1} << 40, "bytes", "auto", std::move(doc));
  p.words = {"auto", "inf"};
  return p;
}

NativeParam ucx_size(std::string var, std::string unset_as, std::string doc) {
  return env_integer(std::move(var), 256, int64_t{1} << 30, "bytes", std::move(unset_as), std::move(doc));
}

NativeTable ucx_env_rows() {
  return {
      [] {
        NativeParam p = env_choice("UCX_TLS",
                                   {"all", "sm", "shm", "mm", "posix", "sysv", "xpmem", "cma", "knem", "self", "tcp",
                                    "ib", "rc", "rc_v", "rc_x", "rc_verbs", "rc_mlx5", "ud", "ud_v", "ud_x", "ud_verbs",
                                    "ud_mlx5", "dc", "dc_x", "dc_mlx5", "cuda", "cuda_copy", "cuda_ipc", "gdr_copy",
                                    "rocm", "rocm_copy", "rocm_ipc", "ugni"},
                                   "all", "transports UCX may use (sm: the shared-memory ones; cma: single-copy "
                                   "reads and writes between processes)");
        p.list = true;
        return p;
      }(),
      env_choice("UCX_RNDV_SCHEME", {"auto", "get_zcopy", "put_zcopy", "get_ppln", "put_ppln", "am", "rkey_ptr"},
                 "auto", "how a rendezvous moves the data: the receiver reads, the sender writes, or active messages"),
      ucx_threshold("UCX_RNDV_THRESH", "messages from this size on use the rendezvous protocol (below: eager)"),
      ucx_threshold("UCX_ZCOPY_THRESH", "eager messages from this size on are sent zero-copy (below: copied)"),
      ucx_threshold("UCX_BCOPY_THRESH", "messages from this size on are copied through buffers (below: short)"),
      ucx_size("UCX_SEG_SIZE", "8192", "size of the eager and pipeline segments"),
      ucx_size("UCX_TCP_TX_SEG_SIZE", "8192", "TCP send segment (copied eager messages up to this size)"),
      ucx_size("UCX_TCP_RX_SEG_SIZE", "65536", "TCP receive segment"),
      ucx_threshold("UCX_TCP_SNDBUF", "socket send buffer of the TCP transport"),
      ucx_threshold("UCX_TCP_RCVBUF", "socket receive buffer of the TCP transport"),
      env_choice("UCX_TCP_NODELAY", {"y", "n"}, "y", "TCP_NODELAY on the TCP transport's sockets"),
      env_integer("UCX_MAX_RNDV_RAILS", 1, 8, "devices", "2", "devices a rendezvous may stripe over"),
      env_integer("UCX_MAX_EAGER_RAILS", 1, 8, "devices", "1", "devices an eager message may stripe over"),
      [] {
        NativeParam p = env_choice("UCX_NET_DEVICES", {}, "all", "network devices UCX may use (mlx5_0:1, eth0)");
        p.domain = "all, or names of this host's devices";
        return p;
      }(),
      env_choice("UCX_PROTO_ENABLE", {"y", "n"}, "n", "the new protocol selection (its default is n in UCX 1.13)"),
  };
}

}  // namespace

ACCELTUNE_REGISTER_ENV_TABLE("ucx", "UCX", "UCX_", ucx_env_rows());

}  // namespace acceltune
