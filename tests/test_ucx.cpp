// The ucx kernel against real UCX: two processes on this host (shared memory and TCP over
// loopback), a responder behind a control server as with --peer, and the ucx-env export.
#include <chrono>

#include <gtest/gtest.h>

#include "kernels/shared/peer.hpp"
#include "tests/helpers.hpp"
#include "tuner/best.hpp"

namespace acceltune {
namespace {

using test::run_cli;

// A small space for one operation; `tls` is the only value of UCX_TLS unless more are given.
std::string space_text(const std::string& op, const std::string& tls_values = R"(["shm"])",
                       const std::string& tls_default = "shm") {
  return fmt::format(R"({{"name": "ucx-{0}", "kernel": "ucx", "operation": "{0}", "sizes": ["4K", "1M"], "window": 8,
    "params": [
      {{"name": "tls", "kind": "categorical", "values": {1}, "default": "{2}", "env": "UCX_TLS"}},
      {{"name": "rndv_scheme", "kind": "categorical", "values": ["auto", "get_zcopy", "put_zcopy"], "default": "auto",
       "env": "UCX_RNDV_SCHEME"}}]}})",
                     op, tls_values, tls_default);
}

// UCX that cannot start here at all (no shared memory, a library that refuses) is a skip with
// UCX's own reason; anything else that fails is a failure of the test.
std::string ucx_unusable_reason(const test::TempDir& dir) {
  test::write_file(dir / "probe.json", space_text("tag_bw"));
  auto r = run_cli({"bench", "--space", "probe.json", "--sizes", "4K", "--max-seconds", "0.01"}, dir.path());
  if (r.exit_code == 0) return "";
  for (const char* sign : {"ucp_init failed", "ucp_worker_create failed", "UCX rejected its configuration"}) {
    if (r.out.find(sign) != std::string::npos) return r.out;
  }
  return "";
}

#define SKIP_WITHOUT_UCX(dir)                                                            \
  do {                                                                                   \
    const std::string why = ucx_unusable_reason(dir);                                    \
    if (!why.empty()) GTEST_SKIP() << "UCX cannot run two processes on this host: " << why; \
  } while (0)

TEST(Ucx, EveryOperationMeasuresAndChecksTheData) {
  test::TempDir dir;
  SKIP_WITHOUT_UCX(dir);
  for (const std::string op : {"tag_bw", "tag_lat", "put_bw", "put_lat"}) {
    for (const std::string tls : {"shm", "tcp"}) {
      test::write_file(dir / "s.json", space_text(op, fmt::format(R"(["{}"])", tls), tls));
      auto r = run_cli({"bench", "--space", "s.json", "--max-seconds", "0.05", "--json"}, dir.path());
      ASSERT_EQ(r.exit_code, 0) << op << " over " << tls << ": " << r.out << r.err;
      const Json j = Json::parse(r.out);
      ASSERT_EQ(j["measurements"].size(), 2u) << r.out;
      for (const Json& m : j["measurements"]) {
        const std::string what = fmt::format("{} over {} at {} bytes", op, tls, m["bytes"].dump());
        EXPECT_EQ(m["state"], "ok") << what << ": " << m.dump();
        EXPECT_GT(m["value"].get<double>(), 0) << what;
        const Json& d = m["details"];
        EXPECT_EQ(d["operation"], op) << what;
        ASSERT_TRUE(d.contains("ucx_transports")) << what << ": " << d.dump();
        bool saw_tls = false;
        for (const auto& t : d["ucx_transports"]) {
          const std::string name = t.get<std::string>();
          saw_tls |= tls == "tcp" ? name.rfind("tcp/", 0) == 0 : name.rfind("tcp/", 0) != 0;
        }
        EXPECT_TRUE(saw_tls) << what << ": UCX_TLS=" << tls << " but the lanes are " << d["ucx_transports"].dump();
        if (op.ends_with("_lat")) {
          EXPECT_GT(d["latency_seconds"].get<double>(), 0) << what;
        } else {
          EXPECT_EQ(d["window"], 8) << what;
        }
      }
    }
  }
}

TEST(Ucx, AnUnavailableTransportFailsTheTrialWithOneClearLine) {
  test::TempDir dir;
  SKIP_WITHOUT_UCX(dir);
  test::write_file(dir / "rc.json", space_text("tag_bw", R"(["shm", "rc"])", "shm"));
  const auto start = std::chrono::steady_clock::now();
  auto r = run_cli({"bench", "--space", "rc.json", "--set", "tls=rc", "--sizes", "64K", "--json"}, dir.path());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (r.exit_code == 0) GTEST_SKIP() << "this host has an RC (RDMA) transport, so UCX_TLS=rc works here";
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_LT(seconds, 20.0) << "a missing transport must fail fast, not wait for the trial watchdog";
  const Json j = Json::parse(r.out);
  const Json& m = j["measurements"][0];
  EXPECT_EQ(m["state"], "failed");
  const std::string error = m["error"].get<std::string>();
  EXPECT_NE(error.find("UCX_TLS=rc"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(Ucx, BadSpacesAreRefusedWithTheField) {
  test::TempDir dir;
  test::write_file(dir / "op.json", space_text("tag_bandwidth"));
  auto r = run_cli({"bench", "--space", "op.json"}, dir.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("tag_bandwidth"), std::string::npos) << r.err;
  test::write_file(dir / "native.json", R"({"name": "n", "kernel": "ucx", "operation": "tag_bw", "params": [
    {"name": "window", "kind": "int", "min": 1, "max": 4, "default": 1}]})");
  r = run_cli({"bench", "--space", "native.json"}, dir.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'window'"), std::string::npos) << r.err;
  test::write_file(dir / "w.json", R"({"name": "w", "kernel": "ucx", "operation": "tag_bw", "window": 0, "params": [
    {"name": "tls", "kind": "categorical", "values": ["shm"], "default": "shm", "env": "UCX_TLS"}]})");
  r = run_cli({"bench", "--space", "w.json"}, dir.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'window'"), std::string::npos) << r.err;
}

TEST(Ucx, ASearchCertifiesAndExportsItsUcxVariables) {
  test::TempDir dir;
  SKIP_WITHOUT_UCX(dir);
  test::write_file(dir / "s.json", space_text("tag_bw", R"(["shm", "posix,cma", "tcp"])", "shm"));
  auto r = run_cli({"search", "--space", "s.json", "--strategy", "grid", "--budget", "9", "--sizes", "1M",
                    "--max-seconds", "0.05", "--out", "study"},
                   dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("gain [95% interval]"), std::string::npos) << r.out;
  const auto lines = test::lines_of(test::read_file(dir / "study" / "trials.jsonl"));
  ASSERT_EQ(lines.size(), 9u);
  for (const auto& l : lines) EXPECT_EQ(Json::parse(l)["state"], "ok") << l;
  const Json best = Json::parse(test::read_file(dir / "study" / "best.json"));
  EXPECT_TRUE(best["certified"].get<bool>()) << best.dump();

  auto e = run_cli({"export", "study", "--format", "ucx-env", "-o", "ucx.env"}, dir.path());
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const std::string text = test::read_file(dir / "ucx.env");
  // The plan's job-wide values; a value equal to the library default is left to the library.
  const Json chosen = best["export_config"];
  const Json def = best["default_config"];
  int written = 0;
  std::string expect_echo;
  for (const auto& [param, var] : {std::pair<std::string, std::string>{"tls", "UCX_TLS"}, {"rndv_scheme", "UCX_RNDV_SCHEME"}}) {
    const std::string v = chosen[param].get<std::string>();
    if (chosen[param] == def[param]) {
      EXPECT_NE(text.find("# " + var + " is left to the library\n"), std::string::npos) << text;
      EXPECT_EQ(text.find("\n" + var + "="), std::string::npos) << text;
      expect_echo += (expect_echo.empty() ? "" : "/");
    } else {
      EXPECT_NE(text.find(var + "=" + v + "\n"), std::string::npos) << text;
      expect_echo += (expect_echo.empty() ? "" : "/") + v;
      ++written;
    }
  }
  auto x = run_cli({"exec", "--config", "ucx.env", "--", "sh", "-c", "echo \"$UCX_TLS/$UCX_RNDV_SCHEME\""}, dir.path());
  EXPECT_EQ(x.exit_code, 0) << x.err;
  EXPECT_EQ(x.out, (chosen["tls"] == def["tls"] ? "" : chosen["tls"].get<std::string>()) + "/" +
                       (chosen["rndv_scheme"] == def["rndv_scheme"] ? "" : chosen["rndv_scheme"].get<std::string>()) + "\n");
  // The same file read by a shell, in an environment without acceltune's own UCX_HANDLE_ERRORS.
  auto sh = run_cli({"exec", "--config", "ucx.env", "--", "sh", "-c",
                     "env -i sh -c 'set -a; . ./ucx.env; set +a; env' | grep -c '^UCX_'"},
                    dir.path());
  EXPECT_EQ(sh.out, std::to_string(written) + "\n") << sh.err;
  // exec hands the job no measurement hygiene of acceltune's.
  auto h = run_cli({"exec", "--config", "study", "--", "sh", "-c", "echo \"[${UCX_HANDLE_ERRORS-unset}]\""}, dir.path());
  EXPECT_EQ(h.out, "[unset]\n") << h.err;
}

TEST(Ucx, TheEnvExportKeepsOnlyUcxVariablesAndNotesOtherRanges) {
  BestTable b;
  b.space = "s";
  b.kernel = "ucx";
  b.trials = 3;
  b.trials_ok = 3;
  b.env = {{"tls", "UCX_TLS"}, {"thresh", "UCX_RNDV_THRESH"}, {"other", "OTHER_LIBRARY_KNOB"}};
  b.default_config = {{"tls", "all"}, {"thresh", "auto"}, {"other", 1}};
  b.export_config = {{"tls", "shm"}, {"thresh", 262144}, {"other", 2}};
  SizeRange small{0, 65535, {4096}, {{"tls", "shm"}, {"thresh", 262144}, {"other", 2}}, false};
  SizeRange large{65536, UINT64_MAX, {1 << 20}, {{"tls", "shm"}, {"thresh", "auto"}, {"other", 2}}, false};
  b.ranges = {small, large};
  auto out = emit("ucx-env", b);
  ASSERT_TRUE(out.has_value()) << out.error().message;
  // A study of one path: UCX reads one environment for every path, so its lines are held back,
  // written commented out with why (tuner/plan.hpp).
  EXPECT_NE(out->find("\n# UCX_TLS=shm\n"), std::string::npos) << *out;
  EXPECT_NE(out->find("\n# UCX_RNDV_THRESH=262144\n"), std::string::npos) << *out;
  EXPECT_EQ(out->find("\nUCX_"), std::string::npos) << *out;
  EXPECT_NE(out->find("# held back: the ucx family's jobs read one environment for every path"), std::string::npos) << *out;
  EXPECT_EQ(out->find("OTHER_LIBRARY_KNOB"), std::string::npos) << *out;
  // UCX reads its variables once per process: one value for the job, no per-range choices.
  EXPECT_EQ(out->find("# bytes"), std::string::npos) << *out;

  BestTable none = b;
  none.env = {{"other", "OTHER_LIBRARY_KNOB"}};
  auto refused = emit("ucx-env", none);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().exit_code(), 2);
}

TEST(Ucx, PeerPlacementRunsTheResponderBehindAControlServer) {
  test::TempDir dir;
  SKIP_WITHOUT_UCX(dir);
  auto server = PeerServer::start("127.0.0.1", 0, Json{{"insecure", true}});
  ASSERT_TRUE(server.has_value()) << server.error().message;
  test::write_file(dir / "s.json", space_text("tag_lat", R"(["tcp", "shm"])", "tcp"));
  const std::string peer = fmt::format("127.0.0.1:{}", (*server)->port());
  auto r = run_cli({"bench", "--space", "s.json", "--peer", peer, "--max-seconds", "0.05", "--json"}, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Json j = Json::parse(r.out);
  ASSERT_FALSE(j["measurements"].empty()) << r.out;
  for (const Json& m : j["measurements"]) {
    EXPECT_EQ(m["state"], "ok") << m.dump();
    // The responder took UCX_TLS=tcp from the hello: only TCP lanes connect the two, and there
    // is at least one (an empty list would say nothing).
    ASSERT_TRUE(m["details"].contains("ucx_transports")) << m.dump();
    EXPECT_FALSE(m["details"]["ucx_transports"].empty()) << m.dump();
    for (const auto& t : m["details"]["ucx_transports"]) EXPECT_EQ(t.get<std::string>().rfind("tcp/", 0), 0u) << m.dump();
  }
  auto bad = run_cli({"bench", "--space", "s.json", "--peer", "127.0.0.1:1", "--sizes", "4K"}, dir.path());
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find("127.0.0.1:1"), std::string::npos) << bad.out << bad.err;
}

// The responder is a child forked from the server's connection thread: it carries on the
// authenticated session (its keys and counters) the handshake began.
TEST(Ucx, PeerPlacementOverAnAuthenticatedSession) {
  test::TempDir dir;
  SKIP_WITHOUT_UCX(dir);
  const std::string secret = "a-ucx-test-secret-of-some-length";
  auto server = PeerServer::start("127.0.0.1", 0, Json::object(), "", secret);
  ASSERT_TRUE(server.has_value()) << server.error().message;
  test::write_file(dir / "s.json", space_text("tag_lat", R"(["tcp"])", "tcp"));
  const std::string peer = fmt::format("127.0.0.1:{}", (*server)->port());
  auto r = run_cli({"bench", "--space", "s.json", "--peer", peer, "--sizes", "4K,64K", "--max-seconds", "0.05", "--json"},
                   dir.path(), "ACCELTUNE_SECRET=" + secret);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Json j = Json::parse(r.out);
  ASSERT_EQ(j["measurements"].size(), 2u) << r.out;
  for (const Json& m : j["measurements"]) EXPECT_EQ(m["state"], "ok") << m.dump();
}

}  // namespace
}  // namespace acceltune
