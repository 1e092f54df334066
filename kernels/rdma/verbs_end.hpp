// The RDMA end of the verbs kernel, one in each of its two processes (the kernel's and the far
// end's): device context, protection domain, completion queue, registered buffer and RC queue
// pairs, their setup and transitions (INIT, RTR, RTS), the work requests of a ping-pong's reply
// and receives, and EndInfo, what one end tells the other to connect. Defined in verbs_end.cpp.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/rdma/verbs_rules.hpp"
#include "kernels/shared/pattern.hpp"
#include "tuner/expected.hpp"

namespace acceltune::verbs {


// The memory that a ping-pong's incoming writes fill, read while the device writes it.
unsigned char load_byte(const unsigned char* p);

// What one end tells the other to connect its queue pairs and reach its memory.
struct EndInfo {
  uint32_t qpn[verbs::kMaxQps];
  uint32_t psn;
  uint16_t lid;
  uint8_t gid[16];
  uint64_t addr;  // where the far end's writes and reads go
  uint32_t rkey;
  int32_t active_mtu;
  int32_t max_init_rd_atom;  // the device's max_qp_init_rd_atom: reads it may issue per QP
  int32_t max_rd_atom;       // the device's max_qp_rd_atom: reads it may serve per QP
};

// One end: device context, protection domain, completion queue, queue pairs, registered buffer.
// For a ping-pong the buffer has two halves, what this end sends and where the far end's
// messages land, as perftest's latency tests have; otherwise one, for both.
class End {
 public:
  ~End();

  // gid_index -1: the port's default (0 on InfiniBand, a RoCE v2 GID on Ethernet).
  Status open(const std::string& device, int port, int gid_index, const Settings& s, size_t bytes, bool fill,
              bool two_halves);

  EndInfo info() const;

  Status connect(const EndInfo& far, int mtu);

  Status post_recv(size_t q, size_t bytes);

  // One signalled write or send of `bytes` from the start of the buffer, the reply of a ping-pong.
  Status post_reply(Verb verb, const EndInfo& far, size_t bytes, bool inl);

  // Whether what arrived (the first `bytes` where the far end's messages land) is the pattern;
  // a ping-pong's last byte is its tag.
  bool arrived_intact(size_t bytes, bool ping_pong) const;

  ibv_qp* qp(size_t q) const { return qps_[q]; }
  ibv_cq* cq() const { return cq_; }
  ibv_mr* mr() const { return mr_; }
  unsigned char* buf() const { return buf_; }
  unsigned char* dest() const { return buf_ + dest_offset_; }
  size_t qp_count() const { return qps_.size(); }

 private:
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_mr* mr_ = nullptr;
  std::vector<ibv_qp*> qps_;
  std::string name_;
  unsigned char* buf_ = nullptr;
  size_t bytes_ = 0, half_ = 0, dest_offset_ = 0;
  uint8_t port_ = 1;
  bool ethernet_ = false;
  bool gid_given_ = false;
  int gid_index_ = 0;
  ibv_gid gid_{};
  uint16_t lid_ = 0;
  ibv_mtu active_mtu_ = IBV_MTU_1024;
  int max_init_rd_atom_ = 1, max_rd_atom_ = 1;
  uint32_t psn_ = 0;
};

}  // namespace acceltune::verbs
