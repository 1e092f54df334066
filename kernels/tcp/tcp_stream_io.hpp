// tcp-stream: what its two ends share. The deadlines of the data and control connections, the
// byte pattern the sender writes and the receiver checks, the socket options both ends set,
// whole-buffer send and receive, and page-aligned buffers. The definitions are in
// tcp_stream_io.cpp; the receiver is tcp_stream_receiver.cpp, the sender tcp_stream_sender.cpp.
#pragma once

#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/shared/pattern.hpp"
#include "kernels/shared/socket_channel.hpp"
#include "tuner/expected.hpp"

namespace acceltune::tcp_stream {

// Every wait on a data socket during a measurement: below any trial watchdog.
constexpr double kIoTimeout = 4.0;
// Control replies (a validation run included).
constexpr double kControlTimeout = 8.0;
constexpr size_t kPage = 4096;


std::vector<std::string> available_congestion();
void set_timeouts(int fd, double send_seconds, double recv_seconds);
// SO_SNDBUF / SO_RCVBUF; the FORCE variants (root) pass net.core.wmem_max / rmem_max, which is
// what the exported script raises them to.
Status set_buffer(int fd, bool send_side, int64_t bytes);
Status set_congestion(int fd, const std::string& cc);
std::string get_congestion(int fd);
int get_int_opt(int fd, int level, int name);

// A page-aligned anonymous mapping; data() is `align` bytes past the page boundary.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  AlignedBuffer(size_t bytes, size_t align) : align_(align) {
    length_ = (bytes + align + kPage - 1) / kPage * kPage + kPage;
    void* p = ::mmap(nullptr, length_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error(fmt::format("mmap of {} bytes failed: {}", length_, std::strerror(errno)));
    base_ = static_cast<char*>(p);
    std::memset(base_, 0, length_);  // first touch outside any timing
  }
  ~AlignedBuffer() {
    if (base_) ::munmap(base_, length_);
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  char* data() const { return base_ + align_; }

 private:
  char* base_ = nullptr;
  size_t length_ = 0, align_ = 0;
};

}  // namespace acceltune::tcp_stream
