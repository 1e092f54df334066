// acceltune serve: the far end of transfer kernels for studies run from another host with
// --peer HOST:PORT. The kernels provide the service (kernels/shared/peer.cpp); this file parses its
// options: what clients must prove, where it listens, and what a client may ask of this side.
#include <cstdlib>

#include "tools/cli.hpp"
#include "tuner/service.hpp"

namespace acceltune::cli {

void add_serve_command(CLI::App& app, CommandList& list) {
  struct Args {
    std::string bind = "127.0.0.1", link, secret_file;
    int port = 18515;
    bool once = false, insecure = false;
    std::vector<int> mtus;
    int sessions = 1;
    double max_session_seconds = 3600;
    std::string max_session_bytes = "16T";
  };
  auto a = std::make_shared<Args>();
  auto* serve = app.add_subcommand("serve", "be the far end of transfer kernels (tcp-stream, ucx) for --peer");
  serve->add_option("--secret-file", a->secret_file,
                    "a file holding the shared secret clients must prove (first line, at least 16 characters, readable "
                    "by its owner only); default: $ACCELTUNE_SECRET_FILE, else $ACCELTUNE_SECRET");
  serve->add_flag("--insecure", a->insecure,
                  "serve without a secret: anyone who reaches the port gets transfers (every connection is logged as "
                  "INSECURE); refused together with a secret (--secret-file, $ACCELTUNE_SECRET_FILE, $ACCELTUNE_SECRET)");
  serve->add_option("--bind", a->bind,
                    "address to listen on (default 127.0.0.1: this host only; name this host's address on the network "
                    "the peers use, or 0.0.0.0)");
  serve->add_option("--port", a->port, "control port (default 18515); data connections use ephemeral ports")
      ->check(CLI::Range(1, 65535));
  serve->add_option("--link", a->link,
                    "the one network interface a client may name on this side: trials may set its MTU (needs root) and "
                    "UCX_NET_DEVICES may name it");
  serve->add_option("--mtu", a->mtus, "MTU values a trial may set on --link, e.g. --mtu 1500,9000 (default: its "
                                       "current MTU only)")
      ->delimiter(',')
      ->check(CLI::Range(576, 65536));
  serve->add_option("--sessions", a->sessions, "client hosts served at once (default 1; 0: any number)")
      ->check(CLI::NonNegativeNumber);
  add_duration_option(serve, "--max-session-seconds", a->max_session_seconds,
                      "a connection is ended after this long (default 1h; 0: no cap)", {.zero_allowed = true});
  serve->add_option("--max-session-bytes", a->max_session_bytes,
                    "bytes one tcp-stream connection may send here, e.g. 16T (default; 0: no cap)");
  serve->add_flag("--once", a->once, "exit after the first client disconnects");
  serve->footer("Client and server prove the shared secret to each other with a challenge-response (HMAC-SHA-256): "
                "it never crosses the wire. Every later control message carries a MAC under a session key, and each "
                "data connection proves its session before a byte counts. Give the same secret to the hosts that run --peer, through --secret-file or "
                "ACCELTUNE_SECRET_FILE.\n"
                "Example: openssl rand -hex 32 > ~/.acceltune-secret; chmod 600 ~/.acceltune-secret\n"
                "  acceltune serve --bind 10.0.0.2 --secret-file ~/.acceltune-secret\n"
                "  (on the other host) acceltune search --space tcp-stream --peer 10.0.0.2:18515 --secret-file "
                "~/.acceltune-secret");
  list.add(serve, [a] {
    const ServiceInfo* s = ServiceRegistry::instance().find("peer");
    if (!s) return fail(runtime_error("this build has no transfer kernel that serves peers"));
    if (a->link.empty() && !a->mtus.empty()) return fail(input_error("--mtu needs --link: the interface it applies to"));
    if (a->insecure && !a->secret_file.empty()) {
      return fail(input_error("--insecure and --secret-file {} contradict each other: --insecure serves without "
                              "authentication, the secret asks for it; drop one",
                              a->secret_file));
    }
    auto bytes = parse_bytes(a->max_session_bytes);
    if (!bytes) return fail(input_error("--max-session-bytes {}: {}", a->max_session_bytes, bytes.error().message));
    if (!a->secret_file.empty()) ::setenv("ACCELTUNE_SECRET_FILE", a->secret_file.c_str(), 1);
    return s->run(Json{{"bind", a->bind},
                       {"port", a->port},
                       {"once", a->once},
                       {"link", a->link},
                       {"mtus", a->mtus},
                       {"insecure", a->insecure},
                       {"sessions", a->sessions},
                       {"max_session_seconds", a->max_session_seconds},
                       {"max_session_bytes", *bytes}});
  });
}

}  // namespace acceltune::cli
