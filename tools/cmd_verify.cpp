// acceltune verify: the delivered gain of a study's plan, loaded the way a job loads it by a plain
// client of the family (tuner/delivery.hpp), interleaved with the library's defaults. On a stored
// study after an upgrade it says whether the plan still pays.
#include <unistd.h>

#include <fstream>

#include "tools/bringup/bundle.hpp"
#include "tools/bundle_input.hpp"
#include "tools/cli.hpp"
#include "tuner/cancel.hpp"
#include "probe/fingerprint.hpp"
#include "tuner/process_guard.hpp"
#include "tuner/study.hpp"
#include "tuner/verify.hpp"

namespace acceltune::cli {

namespace {

// One delivered measurement, certified and delivered side by side.
void print_delivered(const BestTable& b) {
  if (b.delivery.state != "measured") {
    std::printf("delivered: not verified: %s\n", b.delivery.why.c_str());
    return;
  }
  std::printf("delivered through: %s (%d rounds, interleaved with the defaults)\n", b.delivery.client.c_str(),
              b.delivery.rounds);
  std::printf("%-8s %-24s %-24s %s\n", "size", "certified [95%]", "delivered [95%]", "");
  for (const auto& z : b.sizes) {
    const std::string cert = z.certified && z.certified_ratio
                                 ? gain_interval_text(*z.certified_ratio, z.ci_low.value_or(0), z.ci_high.value_or(INFINITY))
                                 : "not certified";
    const std::string del = z.delivered ? gain_interval_text(z.delivered->ratio, z.delivered->ci_low, z.delivered->ci_high)
                                        : "no measurement";
    const std::string meaning = z.delivered ? interval_meaning(z.delivered->ci_low, z.delivered->ci_high) : "";
    const std::string verdict = meaning == "slower" ? "SLOWER than the defaults" : meaning;
    std::printf("%-8s %-24s %-24s %s\n", format_bytes(z.bytes).c_str(), cert.c_str(), del.c_str(), verdict.c_str());
  }
  if (!b.delivery.verdict.empty()) {
    std::printf("verdict: %s after %d rounds: %s\n", b.delivery.verdict.c_str(), b.delivery.rounds,
                b.delivery.verdict_why.c_str());
  }
}

}  // namespace

int verify_study(BestTable& b, int rounds, bool check_fingerprint, int measurements, bool fall_back, int max_rounds,
                 Deadline deadline, std::map<uint64_t, Json> plan_b) {
  const Json now = probe_fingerprint(ProbeScope::identity);
  if (check_fingerprint) {
    const Json stored = b.study.value("fingerprint", Json::object());
    const std::vector<std::string> drift = fingerprint_drift(stored, now);
    if (!drift.empty()) {
      std::printf("the machine differs from the study's (%s -> %s):\n", stored.value("id", "?").c_str(),
                  now.value("id", "?").c_str());
      for (const auto& d : drift) std::printf("  %s\n", d.c_str());
    }
  }
  DeliverOptions o;
  o.verify.rounds = rounds;
  o.verify.max_rounds = max_rounds;
  o.verify.deadline = deadline;
  o.plan_b = std::move(plan_b);
  o.verify.fingerprint_id = now.value("id", "");
  o.measurements = measurements;
  o.fall_back = fall_back;
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  if (tty) {
    o.verify.progress = [](int done, int total) {
      std::fprintf(stderr, "\r\033[Kverifying: run %d/%d (defaults and plan interleaved)", done, total);
    };
  }
  o.on_measured = [tty](const BestTable& measured) {
    if (tty) std::fprintf(stderr, "\r\033[K");
    print_delivered(measured);
  };
  o.on_fallback = [&b](bool again) {
    if (!b.plan.notes.empty()) std::printf("plan: %s\n", b.plan.notes.back().c_str());
    std::printf(again ? "the plan changed after its delivered measurement; measuring it again\n"
                      : "the plan did not ship after its last delivered measurement: it is the library's defaults now\n");
  };
  auto delivered = verify_and_fall_back(b, o);
  if (tty) std::fprintf(stderr, "\r\033[K");
  if (!delivered) return fail(delivered.error());
  if (delivered->out_of_time) std::printf("%s: the plan is the library's defaults now\n", delivered->why.c_str());
  if (delivered->verdict == PlanVerdict::job_failed) {
    return fail(runtime_error("the plan's job failed: {}; the study's plan is the library's defaults now",
                              delivered->why));
  }
  // The exit code is said where it is this command's (verify); search goes on and exits 0.
  const auto code = [fall_back](int rc) { return fall_back ? std::string() : fmt::format(" (exit {})", rc); };
  if (delivered->verdict == PlanVerdict::no_longer_pays) {
    std::printf("the plan does not pay: %s%s\n", b.delivery.verdict_why.c_str(), code(kExitNoLongerPays).c_str());
    return kExitNoLongerPays;
  }
  if (delivered->verdict == PlanVerdict::not_verified || delivered->out_of_time) {
    // Nothing measured proves the plan: a deployment gated on verify must not take this for a yes.
    std::printf("not verified: %s%s\n", delivered->why.c_str(), code(kExitNotVerified).c_str());
    return kExitNotVerified;
  }
  return 0;
}

namespace {

// The machine against the one the bundle was made on, field by field.
void say_drift(const std::string& dir) {
  std::ifstream in(dir + "/" + kBundleMarker);
  const Json summary = Json::parse(in, nullptr, false);
  if (!summary.is_object() || !summary.contains("fingerprint")) return;
  const Json stored = summary["fingerprint"];
  const Json now = probe_fingerprint(ProbeScope::identity);
  const std::vector<std::string> drift = fingerprint_drift(stored, now);
  if (drift.empty()) return;
  std::printf("the machine differs from the bundle's (%s -> %s):\n", stored.value("id", "?").c_str(),
              now.value("id", "?").c_str());
  for (const auto& d : drift) std::printf("  %s\n", d.c_str());
}

// One study's figures under the bundle; returns whether it is slower somewhere or its job failed.
bool print_bundle_delivery(const bringup::BundleDelivery& d) {
  if (d.state != "measured") {
    std::printf("%s: %s: %s\n", d.study.c_str(), d.failed ? "its job FAILED under the bundle" : "not verified",
                d.why.c_str());
    return d.failed;
  }
  std::printf("%s: the bundle against the defaults, through its plain client:\n", d.study.c_str());
  bool slower = false;
  for (const auto& [bytes, z] : d.sizes) {
    const std::string meaning = interval_meaning(z.ci_low, z.ci_high);
    slower = slower || z.slower;
    std::printf("  %-8s %-24s %s\n", format_bytes(bytes).c_str(), gain_interval_text(z.ratio, z.ci_low, z.ci_high).c_str(),
                z.slower ? "SLOWER than the defaults" : meaning.c_str());
  }
  return slower;
}

// A bring-up bundle: its merged acceltune.env, as the bundle's jobs load it, measured again through
// the plain client of every study it loads something into, interleaved with the defaults.
int verify_bundle(const std::string& dir, int rounds) {
  auto studies = load_bundle_studies(dir);
  if (!studies) return fail(studies.error());
  auto env = bundle_env(dir);
  if (!env) return fail(env.error());
  std::vector<bringup::Contribution> contributions;
  for (const auto& d : *studies) {
    if (d.best.trials_ok == 0) continue;
    auto c = bringup::contribution_of(d, dir);
    if (!c) return fail(c.error());
    contributions.push_back(std::move(c).value());
  }
  say_drift(dir);
  // Hand-edited files first: what lint finds is said before anything is measured.
  if (const auto findings = lint_bundle(dir); !findings.empty()) {
    std::printf("lint: %zu finding%s in the bundle's files (acceltune lint %s):\n", findings.size(),
                findings.size() == 1 ? "" : "s", dir.c_str());
    for (const auto& f : findings) std::printf("  %s\n", f.c_str());
  }
  install_cancel_handlers();
  auto guard = ProcessGuard::start();
  if (!guard) return fail(guard.error());
  std::printf("bundle %s: acceltune.env (%zu variable%s) measured through each study's plain client, %d rounds "
              "interleaved with the defaults\n",
              dir.c_str(), env->size(), env->size() == 1 ? "" : "s", rounds);
  std::fflush(stdout);
  bringup::MergeOptions mo;
  mo.rounds = rounds;
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  mo.progress = [tty](const std::string& what) {
    std::fprintf(stderr, tty ? "\r\033[K%s" : "acceltune: %s\n", what.c_str());
  };
  const auto delivered = bringup::measure_bundle(contributions, *env, mo);
  if (tty) std::fprintf(stderr, "\r\033[K");
  std::vector<std::string> worse;
  int measured = 0;
  for (const auto& d : delivered) {
    if (print_bundle_delivery(d)) worse.push_back(d.study);
    if (d.state == "measured") ++measured;
  }
  if (cancel_requested()) return 128 + cancel_signal();
  if (!worse.empty()) {
    std::printf("the bundle does not ship: slower than the defaults, or failing, for %s (exit %d)\n",
                join(worse, ", ").c_str(), kExitNoLongerPays);
    return kExitNoLongerPays;
  }
  if (measured == 0) {
    std::printf("not verified: no study's client measured the bundle (exit %d)\n", kExitNotVerified);
    return kExitNotVerified;
  }
  std::printf("the bundle ships: no study it loads into is slower than its defaults at any size (%d measured)\n",
              measured);
  return 0;
}

int cmd_verify(const std::string& dir, int rounds, int max_rounds) {
  if (is_bundle(dir)) return verify_bundle(dir, rounds);
  auto s = load_study_best(dir);
  if (!s) return fail(s.error());
  install_cancel_handlers();
  auto guard = ProcessGuard::start();
  if (!guard) return fail(guard.error());
  return verify_study(s->best, rounds, true, 1, false, max_rounds);
}

}  // namespace

void add_verify_command(CLI::App& app, CommandList& list) {
  struct Args {
    std::string dir;
    int rounds = 5;
    int max_rounds = 24;
  };
  auto a = std::make_shared<Args>();
  auto* v = app.add_subcommand("verify", "measure the delivered gain of a study's plan through a plain job");
  v->add_option("DIR", a->dir,
                "a study directory, or a bring-up bundle (its merged acceltune.env through every study's client)")
      ->required();
  v->add_option("--rounds", a->rounds,
                "interleaved rounds of the defaults and the plan before the first decision (default 5)")
      ->check(CLI::Range(2, 1000));
  v->add_option("--max-rounds", a->max_rounds,
                "rounds it may go on to until the verdict is decided; undecided then does not ship (default 24)")
      ->check(CLI::Range(2, 1000));
  v->footer(fmt::format(
      "The plan (the env export and its per-size files) is loaded by a plain client of the family, started the way "
      "users start it: an MPI program under mpirun (openmpi-bin), ucx_perftest (ucx-utils), acceltune-tcp-client in "
      "acceltune's own network namespaces (root). Families without one show \"not verified\". A changed machine is "
      "reported field by field before measuring.\n"
      "Exit codes: 0 the plan ships (not worse than 0.97x at any size, faster at some), {} it does not, {} not "
      "verified (no plain client, a plan that loads nothing, no time left), 1 a runtime failure, 2 bad input.\n"
      "A bring-up bundle is measured as its jobs load it (acceltune.env) through the client of every study it sets "
      "something for, --rounds rounds; it ships when none of them is slower than its defaults at any size.\n"
      "Example: acceltune verify acceltune-results/mpi-allreduce-1 && deploy",
      kExitNoLongerPays, kExitNotVerified));
  list.add(v, [a] { return cmd_verify(a->dir, a->rounds, a->max_rounds); });
}

}  // namespace acceltune::cli
