// tcp-script: a tcp-stream study as a shell script of the link and TCP-stack settings that a
// sysctl or `ip link` can make (MTU, congestion control), for a person to review and run;
// acceltune never runs it. Socket options that only an application sets (streams, write size,
// nodelay, zero-copy, buffer alignment, a fixed SO_SNDBUF/SO_RCVBUF) are advice in comments.
#include <algorithm>

#include "tuner/family.hpp"
#include "tuner/best.hpp"
#include "tuner/plan.hpp"

namespace acceltune {
namespace {

std::string text_of(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

int64_t int_of(const Json& config, const char* name, int64_t fallback) {
  return config.contains(name) && config[name].is_number_integer() ? config[name].get<int64_t>() : fallback;
}

std::string range_text(const SizeRange& r) {
  return fmt::format("[{}, {})", r.min_bytes == 0 ? "0" : format_bytes(r.min_bytes),
                     r.max_bytes == UINT64_MAX ? "max" : format_bytes(r.max_bytes + 1));
}

std::string bytes_or_auto(int64_t b) { return b <= 0 ? "0 (autotuned)" : format_bytes(static_cast<uint64_t>(b)); }

// "[0, 1M) 9000; [1M, max) 1500" for one param over the ranges.
std::string per_range(const BestTable& best, const char* param, const std::function<std::string(const Json&)>& show) {
  std::string out;
  for (const auto& r : best.ranges) {
    const Json v = r.config.contains(param) ? r.config[param] : Json(nullptr);
    out += fmt::format("{}{} {}", out.empty() ? "" : "; ", range_text(r), v.is_null() ? "-" : show(v));
  }
  return out;
}

// What only the application sets (socket options and I/O): per size, the search's best over every
// param, with its gain inside acceltune. No job loads these, so they are comments; a fixed buffer
// larger than the host's ceiling needs the ceiling raised, which the comment shows as a command
// that only ever raises it.
std::string application_advice_text(const BestTable& best) {
  std::string o = "\n# Advice for the application (socket options and I/O, which no sysctl sets): the search's best\n"
                  "# per size over every param, its gain measured inside acceltune (not what a job gets):\n";
  const auto lines = application_advice_lines(best);
  for (const auto& line : lines) o += "#   " + line + "\n";
  if (lines.empty()) o += "#   the defaults (streams 1, writes of the default size, no zero-copy) were best at every size.\n";
  int64_t snd = 0, rcv = 0;
  for (const auto& s : best.sizes) {
    if (application_advice(s.best_config, best.default_config, best.plan.scopes).empty()) continue;
    snd = std::max(snd, int_of(s.best_config, "sndbuf", 0));
    rcv = std::max(rcv, int_of(s.best_config, "rcvbuf", 0));
  }
  if (snd > 0 || rcv > 0) {
    o += "# A fixed SO_SNDBUF/SO_RCVBUF is capped at net.core.wmem_max/rmem_max; to allow the sizes above\n"
         "# (these lines only raise a ceiling, never lower it):\n";
    if (snd > 0) {
      o += fmt::format("# [ \"$(sysctl -n net.core.wmem_max)\" -ge {0} ] || sysctl -w net.core.wmem_max={0}\n", snd);
    }
    if (rcv > 0) {
      o += fmt::format("# [ \"$(sysctl -n net.core.rmem_max)\" -ge {0} ] || sysctl -w net.core.rmem_max={0}\n", rcv);
    }
  }
  return o;
}

// The link the study measured on, from its placement.
std::string measured_link(const BestTable& best) {
  const Json space = best.study.value("space", Json::object());
  const std::string placement = space.value("placement", std::string("loopback"));
  if (placement == "netns") return "a veth pair between two network namespaces of the measuring host";
  if (placement == "peer") return "the network path to " + space.value("peer", std::string("its peer"));
  return "loopback (lo) of the measuring host";
}

// Why the plan's host settings are not to be applied, or "" when its delivered verdict shipped it.
std::string not_applied_because(const BestTable& best) {
  if (best.delivery.state == "measured" && best.delivery.verdict == "ships") return "";
  if (best.delivery.state == "measured") {
    return fmt::format("its delivered verdict is '{}' ({})", best.delivery.verdict.empty() ? "none" : best.delivery.verdict,
                       best.delivery.verdict_why);
  }
  return "not verified: " +
         (best.delivery.why.empty() ? std::string("no delivered measurement yet (acceltune verify measures it)")
                                    : best.delivery.why);
}

// `text` as one single-quoted shell word.
std::string single_quoted(const std::string& text) {
  std::string o = "'";
  for (char c : text) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

Expected<std::string> emit_tcp_script(const BestTable& best) {
  if (!format_applies("tcp-script", best.kernel)) {
    return input_error("the tcp-script format exports tcp-stream studies; this study's kernel is '{}' (try --format json)",
                       best.kernel);
  }
  if (best.trials_ok == 0) {
    return runtime_error("space {}: no trial measured ok, so there is no config to export", best.space);
  }
  const Json& def = best.default_config;
  const Json& cfg = best.export_config;
  std::string o;
  o += "#!/bin/sh\n";
  o += fmt::format("# acceltune tcp-script: space {}, {} trials ({} ok){}.\n", best.space, best.trials, best.trials_ok,
                   best.certified ? ", gains certified against the default" : ", gains not certified");
  o += "# Review before running: acceltune never runs this script. It holds what `ip link` and sysctl can set;\n"
       "# the socket options an application sets itself are advice at the end. Run it as root on both hosts.\n";
  const bool all_default =
      std::all_of(best.ranges.begin(), best.ranges.end(), [&](const SizeRange& r) { return r.config == best.default_config; });
  if (all_default) {
    o += best.plan.notes.empty() ? "# No config beat the default significantly: nothing here needs changing.\n"
                                 : "# The plan is the host's defaults (why below): nothing here needs changing.\n";
  }
  o += verdict_lines(best);
  o += "#\n# Chosen per message-size range:\n";
  for (const auto& r : best.ranges) {
    std::string diff;
    for (const auto& [k, v] : r.config.items()) {
      if (def.contains(k) && def[k] == v) continue;
      const bool bytes = k == "sndbuf" || k == "rcvbuf" || k == "write_size";
      diff += fmt::format(" {}={}", k, bytes && v.is_number_integer() ? bytes_or_auto(v.get<int64_t>()) : text_of(v));
    }
    o += fmt::format("#   {}{}\n", range_text(r), diff.empty() ? " the default" : diff);
  }
  o += "# Measured over " + measured_link(best) + ": the verdict holds for that link, not for every path.\n";
  const std::string why_not = not_applied_because(best);
  o += "\nset -e\n";
  o += "# Each setting the plan changes prints this host's value beside the proposed one.\n"
       "show() { printf '%s: this host has %s; proposed %s (%s)\\n' \"$1\" \"$(sysctl -n \"$1\" 2>/dev/null || echo unknown)\" "
       "\"$2\" \"$3\"; }\n";

  // The MTU: one per link, so the config chosen for the most sizes; the link name is the operator's.
  const int64_t mtu = int_of(cfg, "mtu", 1500);
  o += "\n# Link MTU (every hop of the path must carry it; edit IFACE, then uncomment). Chosen per range: " +
       per_range(best, "mtu", text_of) + "\n";
  if (mtu != int_of(def, "mtu", 1500) && !why_not.empty()) o += "# Not to be applied: " + why_not + "\n";
  o += fmt::format("# ip link show dev IFACE; ip link set dev IFACE mtu {}\n", mtu);

  // Congestion control: the host-wide default for new connections (the sender's matters). Active
  // only when the plan's delivered verdict shipped it.
  const std::string cc = cfg.contains("congestion") ? text_of(cfg["congestion"]) : "cubic";
  const std::string def_cc = def.contains("congestion") ? text_of(def["congestion"]) : "cubic";
  o += "\n# Congestion control of the sending host, chosen per range: " + per_range(best, "congestion", text_of) + "\n";
  if (cc == def_cc) {
    o += fmt::format("# {} (the default) was chosen: net.ipv4.tcp_congestion_control stays as it is.\n", cc);
  } else if (why_not.empty()) {
    o += fmt::format("show net.ipv4.tcp_congestion_control {} 'applied: its delivered verdict ships'\n", cc);
    o += fmt::format("# (modprobe tcp_{} first where it is a module)\n", cc);
    o += fmt::format("sysctl -w net.ipv4.tcp_congestion_control={}\n", cc);
  } else {
    o += fmt::format("show net.ipv4.tcp_congestion_control {} {}\n", cc, single_quoted("not applied: " + why_not));
    o += fmt::format("# Not applied: {}\n# sysctl -w net.ipv4.tcp_congestion_control={}\n", why_not, cc);
  }

  o += application_advice_text(best);
  return o;
}

// What `ip link` and sysctl set for the whole host; the other socket options are the application's,
// a fixed SO_SNDBUF/SO_RCVBUF included: the kernel measures a fixed buffer, which no sysctl gives
// an application that sets none (autotuning's limits are another setting, never measured).
std::optional<Scope> tcp_script_carries(const ParamRef& p) {
  if (!format_applies("tcp-script", p.kernel)) return std::nullopt;
  if (p.name == "mtu" || p.name == "congestion") return Scope::job;
  return std::nullopt;
}

}  // namespace

ACCELTUNE_REGISTER(EmitterInfo, "tcp-script",
                   (EmitterInfo{"a tcp-stream study as a reviewed shell script of ip link / sysctl settings",
                                emit_tcp_script, tcp_script_carries, {}, {}}))

}  // namespace acceltune
