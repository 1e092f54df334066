// tcp-stream's kernel class (the sending end): its settings, its state and its members. Defined
// in two files: tcp_stream.cpp (params, placements, the measurement, the registration) and
// tcp_stream_sender.cpp (the session with the far end, the data connections, the writes).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/shared/team.hpp"
#include "kernels/shared/netns.hpp"
#include "kernels/shared/peer.hpp"
#include "kernels/tcp/tcp_stream_io.hpp"
#include "tuner/kernel.hpp"

namespace acceltune::tcp_stream {

enum class Zerocopy { none, msg_zerocopy, sendfile };

struct Settings {
  int mtu = 1500;
  int64_t sndbuf = 0, rcvbuf = 0;
  int streams = 1;
  int64_t write_size = 128 << 10;
  bool nodelay = false;
  Zerocopy zerocopy = Zerocopy::none;
  std::string congestion = "cubic";
  int64_t align = 0;

  // What the data connections depend on; a change means new connections.
  auto connection_key() const {
    return std::make_tuple(mtu, sndbuf, rcvbuf, streams, write_size, nodelay, zerocopy, congestion, align);
  }
};

class TcpStream final : public Kernel {
 public:
  ~TcpStream() override;
  const NativeTable& native_table() const override;
  std::vector<std::string> placements() const override { return {"loopback", "netns", "peer"}; }
  Status attach(Space& space) override;
  Json link() const override;
  Measurement measure(const Space& space, const Config& config, uint64_t bytes, const MeasureSettings& settings,
                      const MeasureContext&) override;

 private:
  struct DataStream {
    int fd = -1;
    uint64_t share = 0, offset = 0;
    uint64_t zc_sent = 0, zc_completed = 0, zc_copied = 0;
    std::string error;
  };

  // ---- set-up ----

  Status check_params(const Space& space) const;

  // Where the kernel cannot change the link's MTU, the mtu param keeps its default: the value
  // names the link as it is (details.link_mtu says what that is). Asking for another is refused.
  void hold_mtu_at_default(const Space& space, size_t k, std::vector<std::function<bool(const Config&)>>& keep,
                           std::vector<std::string>& why, const std::string& reason);

  // Congestion controls the space lists but this host lacks are left out, with one note;
  // the default must be there.
  Status restrict_congestion(Space& space, std::vector<std::function<bool(const Config&)>>& keep,
                             std::vector<std::string>& why);

  Settings read(const Space& space, const Config& c) const;
  void release_placement();

  // ---- the session and the data connections (tcp_stream_sender.cpp) ----

  // The control connection, and for loopback and netns the in-process server it talks to.
  Status open_session();
  std::string client_netns() const { return placement_ == "netns" ? ns_.client : ""; }

  // Sends one control line and waits for its {"ok": true} answer.
  Expected<Json> request(const Json& msg);
  void close_data();
  void close_session();
  Status apply_mtu(const Settings& s);
  Status prepare(const Settings& s, uint64_t bytes);
  Status connect_streams(const Settings& s);
  Status set_size(const Settings& s, uint64_t bytes);

  // ---- the timed run of one stream ----

  void stream_failed(DataStream& d, std::string e);
  std::string first_run_error() const;
  // Takes zero-copy completions off the error queue; waits for all when `all`.
  bool drain_zerocopy(DataStream& d, bool all);
  void run_stream(int t);

  std::string placement_ = "loopback";
  std::vector<std::string> notes_;
  // netns
  std::shared_ptr<NetnsPair> pair_;
  NetnsPairInfo ns_;
  bool set_env_ = false;
  // peer
  std::string peer_host_, local_link_;
  int peer_port_ = 0;
  bool peer_sets_mtu_ = false;
  // the session
  std::unique_ptr<PeerServer> server_;
  std::string server_host_;
  ControlChannel ctrl_;  // the session with the far end (owns the connection)
  Json hello_ = Json::object();
  std::string local_secret_;  // what this host's own server (loopback, netns) asks clients to prove
  int applied_mtu_ = 0;
  std::optional<decltype(Settings{}.connection_key())> connected_;
  Settings settings_;
  std::vector<DataStream> data_;
  std::unique_ptr<Team> team_;
  uint64_t sized_bytes_ = 0;
  std::unique_ptr<AlignedBuffer> send_buf_;
  int memfd_ = -1;
  std::atomic<bool> failed_{false};
  uint64_t runs_ = 0;
  // observations of the current connections
  int mss_ = 0, rcvbuf_effective_ = 0, link_mtu_ = 0, path_mtu_ = 0;
  std::string congestion_in_use_;
};

}  // namespace acceltune::tcp_stream
