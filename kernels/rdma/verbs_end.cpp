// The RDMA end of the verbs kernel: opening the device and its port (GID, message size), the
// protection domain, completion queue, registered buffer and RC queue pairs, connecting the queue
// pairs to the far end's (INIT, RTR, RTS), and the posts a ping-pong's end makes. Declared in
// verbs_end.hpp.
#include "kernels/rdma/verbs_end.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>

namespace acceltune::verbs {
namespace {

ibv_mtu mtu_enum(int bytes) {
  switch (bytes) {
    case 256: return IBV_MTU_256;
    case 512: return IBV_MTU_512;
    case 1024: return IBV_MTU_1024;
    case 2048: return IBV_MTU_2048;
    default: return IBV_MTU_4096;
  }
}
int mtu_bytes(ibv_mtu m) { return 128 << static_cast<int>(m); }

// The GID table of a port with each entry's type. The type comes from sysfs, which every
// rdma-core and kernel with RoCE provide (this rdma-core's verbs.h has no ibv_query_gid_type).
std::vector<verbs::GidEntry> gid_table(ibv_context* ctx, uint8_t port, int length, bool ethernet) {
  std::vector<verbs::GidEntry> table;
  for (int i = 0; i < length; ++i) {
    ibv_gid g{};
    if (ibv_query_gid(ctx, port, i, &g) != 0) continue;  // an empty slot, on some versions
    verbs::GidEntry e;
    e.index = i;
    std::memcpy(e.raw.data(), g.raw, 16);
    if (verbs::gid_is_zero(e.raw)) continue;
    std::ifstream f(fmt::format("{}/ports/{}/gid_attrs/types/{}", ctx->device->ibdev_path, port, i));
    std::string text;
    if (f && std::getline(f, text)) e.type = verbs::gid_type_from_sysfs(text, ethernet);
    table.push_back(e);
  }
  return table;
}

}  // namespace

unsigned char load_byte(const unsigned char* p) {
  const unsigned char b = *static_cast<const volatile unsigned char*>(p);
  std::atomic_thread_fence(std::memory_order_acquire);
  return b;
}

End::~End() {
  for (auto* q : qps_) ibv_destroy_qp(q);
  if (mr_) ibv_dereg_mr(mr_);
  if (cq_) ibv_destroy_cq(cq_);
  if (pd_) ibv_dealloc_pd(pd_);
  if (ctx_) ibv_close_device(ctx_);
  std::free(buf_);
}

Status End::open(const std::string& device, int port, int gid_index, const Settings& s, size_t bytes, bool fill,
                 bool two_halves) {
  port_ = static_cast<uint8_t>(port);
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list || n == 0) {
    if (list) ibv_free_device_list(list);
    return runtime_error("kernel 'verbs' needs an RDMA device; none found");
  }
  ibv_device* dev = nullptr;
  for (int i = 0; i < n; ++i) {
    if (device.empty() || device == ibv_get_device_name(list[i])) {
      dev = list[i];
      break;
    }
  }
  if (dev) {
    name_ = ibv_get_device_name(dev);
    ctx_ = ibv_open_device(dev);
  }
  ibv_free_device_list(list);
  if (!dev) return runtime_error("no RDMA device named '{}'", device);
  if (!ctx_) return runtime_error("ibv_open_device {}: {}", name_, std::strerror(errno));
  ibv_port_attr pa{};
  if (ibv_query_port(ctx_, port_, &pa) != 0) {
    return runtime_error("ibv_query_port {} port {}: {}", name_, port, std::strerror(errno));
  }
  if (pa.state != IBV_PORT_ACTIVE) return runtime_error("RDMA port {} of {} is not active", port, name_);
  ACCELTUNE_TRY(verbs::check_message_size(bytes, pa.max_msg_sz, name_, port));
  lid_ = pa.lid;
  active_mtu_ = pa.active_mtu;
  ethernet_ = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
  ibv_device_attr da{};
  if (ibv_query_device(ctx_, &da) != 0) return runtime_error("ibv_query_device {}: {}", name_, std::strerror(errno));
  max_init_rd_atom_ = da.max_qp_init_rd_atom;
  max_rd_atom_ = da.max_qp_rd_atom;
  gid_given_ = gid_index >= 0;
  gid_index_ = gid_given_ ? gid_index : 0;
  if (!gid_given_ && ethernet_) {
    const auto table = gid_table(ctx_, port_, pa.gid_tbl_len, true);
    ACCELTUNE_TRY_ASSIGN(gid_index_, verbs::choose_roce_gid(table, name_, port));
  }
  if (ibv_query_gid(ctx_, port_, gid_index_, &gid_) != 0) {
    return runtime_error("ibv_query_gid {} port {} index {}: {}", name_, port, gid_index_, std::strerror(errno));
  }
  pd_ = ibv_alloc_pd(ctx_);
  if (!pd_) return runtime_error("ibv_alloc_pd: {}", std::strerror(errno));
  const int depth = s.qps * (2 * s.outstanding + 1);  // sends and receives share it
  cq_ = ibv_create_cq(ctx_, depth, nullptr, nullptr, 0);
  if (!cq_) return runtime_error("ibv_create_cq of {} entries: {}", depth, std::strerror(errno));
  half_ = (std::max<size_t>(bytes, 64) + 63) / 64 * 64;
  bytes_ = two_halves ? 2 * half_ : half_;
  dest_offset_ = two_halves ? half_ : 0;
  buf_ = static_cast<unsigned char*>(std::aligned_alloc(4096, (bytes_ + 4095) / 4096 * 4096));
  if (!buf_) return runtime_error("cannot allocate {} bytes", bytes_);
  for (size_t i = 0; i < bytes_; ++i) buf_[i] = fill && i < half_ ? pattern_byte(i) : 0;
  mr_ = ibv_reg_mr(pd_, buf_, bytes_, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  if (!mr_) return runtime_error("ibv_reg_mr of {} bytes: {}", bytes_, std::strerror(errno));
  for (int q = 0; q < s.qps; ++q) {
    ibv_qp_init_attr ia{};
    ia.send_cq = ia.recv_cq = cq_;
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_send_wr = static_cast<uint32_t>(s.outstanding);
    ia.cap.max_recv_wr = static_cast<uint32_t>(s.outstanding);
    ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
    ia.cap.max_inline_data = static_cast<uint32_t>(s.inline_bytes);
    ia.sq_sig_all = 0;
    ibv_qp* qp = ibv_create_qp(pd_, &ia);
    if (!qp) {
      return runtime_error("ibv_create_qp ({} in flight, {} inline bytes): {}", s.outstanding, s.inline_bytes,
                           std::strerror(errno));
    }
    qps_.push_back(qp);
  }
  psn_ = std::random_device{}() & 0xffffff;
  return {};
}

EndInfo End::info() const {
  EndInfo e{};
  for (size_t q = 0; q < qps_.size(); ++q) e.qpn[q] = qps_[q]->qp_num;
  e.psn = psn_;
  e.lid = lid_;
  std::memcpy(e.gid, gid_.raw, 16);
  e.addr = reinterpret_cast<uint64_t>(dest());
  e.rkey = mr_->rkey;
  e.active_mtu = mtu_bytes(active_mtu_);
  e.max_init_rd_atom = max_init_rd_atom_;
  e.max_rd_atom = max_rd_atom_;
  return e;
}

Status End::connect(const EndInfo& far, int mtu) {
  if (mtu > mtu_bytes(active_mtu_) || mtu > far.active_mtu) {
    return runtime_error("path MTU {} exceeds the port's active MTU {}", mtu, std::min(mtu_bytes(active_mtu_), far.active_mtu));
  }
  const verbs::ReadDepths depths =
      verbs::read_depths(max_init_rd_atom_, max_rd_atom_, far.max_init_rd_atom, far.max_rd_atom);
  for (size_t q = 0; q < qps_.size(); ++q) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = port_;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE;
    if (ibv_modify_qp(qps_[q], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0) {
      return runtime_error("QP to INIT: {}", std::strerror(errno));
    }
    a = ibv_qp_attr{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = mtu_enum(mtu);
    a.dest_qp_num = far.qpn[q];
    a.rq_psn = far.psn;
    a.max_dest_rd_atomic = static_cast<uint8_t>(depths.responder);
    a.min_rnr_timer = 1;
    a.ah_attr.port_num = port_;
    a.ah_attr.dlid = far.lid;
    // RoCE has no LIDs: the address is the GID, which needs a global route header. On
    // InfiniBand the ends share a subnet and the LID is enough, unless the space names a GID.
    a.ah_attr.is_global = verbs::needs_grh(ethernet_, gid_given_) ? 1 : 0;
    if (a.ah_attr.is_global) {
      std::memcpy(a.ah_attr.grh.dgid.raw, far.gid, 16);
      a.ah_attr.grh.sgid_index = static_cast<uint8_t>(gid_index_);
      a.ah_attr.grh.hop_limit = 64;
    }
    if (ibv_modify_qp(qps_[q], &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0) {
      return runtime_error("QP to RTR (path MTU {}, GID index {}): {}", mtu, gid_index_, std::strerror(errno));
    }
    a = ibv_qp_attr{};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;  // wait for the far end to post receives, however long
    a.sq_psn = psn_;
    a.max_rd_atomic = static_cast<uint8_t>(depths.initiator);
    if (ibv_modify_qp(qps_[q], &a,
                      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                          IBV_QP_MAX_QP_RD_ATOMIC) != 0) {
      return runtime_error("QP to RTS: {}", std::strerror(errno));
    }
  }
  return {};
}

Status End::post_recv(size_t q, size_t bytes) {
  ibv_sge sge{reinterpret_cast<uint64_t>(dest()), static_cast<uint32_t>(bytes), mr_->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = q;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  if (ibv_post_recv(qps_[q], &wr, &bad) != 0) return runtime_error("ibv_post_recv: {}", std::strerror(errno));
  return {};
}

Status End::post_reply(Verb verb, const EndInfo& far, size_t bytes, bool inl) {
  ibv_sge sge{reinterpret_cast<uint64_t>(buf_), static_cast<uint32_t>(bytes), mr_->lkey};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = verb == Verb::write ? IBV_WR_RDMA_WRITE : IBV_WR_SEND;
  if (verb == Verb::write) {
    wr.wr.rdma.remote_addr = far.addr;
    wr.wr.rdma.rkey = far.rkey;
  }
  wr.send_flags = IBV_SEND_SIGNALED | (inl ? static_cast<unsigned>(IBV_SEND_INLINE) : 0u);
  ibv_send_wr* bad = nullptr;
  if (ibv_post_send(qps_[0], &wr, &bad) != 0) return runtime_error("ibv_post_send: {}", std::strerror(errno));
  return {};
}

bool End::arrived_intact(size_t bytes, bool ping_pong) const {
  const size_t n = ping_pong ? bytes - 1 : bytes;
  for (size_t i = 0; i < n; ++i) {
    if (dest()[i] != pattern_byte(i)) return false;
  }
  return true;
}

}  // namespace acceltune::verbs
