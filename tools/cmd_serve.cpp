// acceltune serve: the far end of transfer kernels for studies run from another host with
// --peer HOST:PORT. The kernels provide the service; this file only parses its options.
#include "tools/cli.hpp"
#include "tuner/service.hpp"

namespace acceltune::cli {

void add_serve_command(CLI::App& app, CommandList& list) {
  struct Args {
    std::string bind = "0.0.0.0", link;
    int port = 18515;
    bool once = false;
  };
  auto a = std::make_shared<Args>();
  auto* serve = app.add_subcommand("serve", "be the far end of transfer kernels (tcp-stream, ucx) for --peer");
  serve->add_option("--bind", a->bind, "address to listen on (default 0.0.0.0)");
  serve->add_option("--port", a->port, "control port (default 18515); data connections use ephemeral ports")
      ->check(CLI::Range(1, 65535));
  serve->add_option("--link", a->link,
                    "a network interface this side may change the MTU of when a trial asks (needs root)");
  serve->add_flag("--once", a->once, "exit after the first client disconnects");
  serve->footer("Example: acceltune serve --port 18515   (then on the other host: "
                "acceltune search --space tcp-stream --peer HOST:18515)");
  list.add(serve, [a] {
    const ServiceInfo* s = ServiceRegistry::instance().find("peer");
    if (!s) return fail(runtime_error("this build has no transfer kernel that serves peers"));
    return s->run(Json{{"bind", a->bind}, {"port", a->port}, {"once", a->once}, {"link", a->link}});
  });
}

}  // namespace acceltune::cli
