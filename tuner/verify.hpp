// Delivered certification: the plan of a study loaded the way a job loads it (tuner/delivery.hpp),
// interleaved with the library's defaults, per size a paired-ratio interval as in certification.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tuner/best.hpp"
#include "tuner/delivery.hpp"
#include "tuner/duration.hpp"
#include "tuner/space.hpp"
#include "tuner/trial.hpp"

namespace acceltune {

// Per arm (0: the defaults, k + 1: arms[k]), per size, the value of each round in order (NaN where
// a run measured nothing).
using RoundValues = std::vector<std::map<uint64_t, std::vector<double>>>;

struct VerifyOptions {
  int rounds = 5;  // defaults/plan pairs, interleaved A B, B A, ...
  // Up to this many rounds, stopping after any round from `rounds` on once `enough` says the
  // comparison is decided (0: exactly `rounds`). verify_delivery sets `enough` from the verdict
  // (tuner/verdict.hpp); 0 there means the verdict's own cap.
  int max_rounds = 0;
  std::function<bool(const RoundValues&)> enough;
  std::function<void(int done, int total)> progress;
  // When set, no round starts after it (the first always does), nor one that would end after it
  // once two are done: the command's time limit bounds the delivered measurement too, and a plan
  // not decided by then does not ship.
  Deadline deadline;
  std::string fingerprint_id;  // the machine measuring it (probe_fingerprint's "id"), kept with the delivery
};

// Measures each of `arms` against `defaults` through one client session, interleaved round by
// round (the order rotates so no arm always runs first): per arm, per size, the paired-ratio
// interval as a Delivered. Sizes no round measured are absent. Stops early on cancellation.
// `values` receives every round's values; with `arm_failure`, a run of an arm other than the
// defaults that fails counts as measuring nothing (NaN) and its first message lands there,
// otherwise it ends the comparison with an error.
Expected<std::vector<std::map<uint64_t, Delivered>>> compare_arms(DeliverySession& session, const DeliveryArm& defaults,
                                                                  const std::vector<DeliveryArm>& arms,
                                                                  const std::vector<uint64_t>& sizes,
                                                                  const VerifyOptions& options,
                                                                  RoundValues* values = nullptr,
                                                                  std::string* arm_failure = nullptr);

// The defaults arm of a study: only the space's pinned context, the library's job-wide defaults.
DeliveryArm defaults_arm(const BestTable& best);

// A session of the study's plain client; in builds with ACCELTUNE_TEST_SEAMS, with
// ACCELTUNE_TEST_SCRIPTED_DELIVERY=RATIO set, a scripted one instead, in which every arm but the
// defaults runs RATIO times them. `described` (when given) receives how its job is started.
Expected<std::unique_ptr<DeliverySession>> open_delivery(const DeliveryClient& client, const Json& study,
                                                         std::string* described = nullptr);

// The sizes where the plan loads exactly the defaults: its job-wide part is the library's and the
// size's choice is the default config (a per-size file then leaves that size to the library).
// None when the job-wide part is not the library's: it changes every size.
std::set<uint64_t> sizes_loading_the_defaults(const BestTable& best);

// Measures the plan of `best` (read with its study record and directory) through its family's
// plain client, in rounds until its verdict is decided (tuner/verdict.hpp), and fills every size's
// `delivered` and the table's `delivery` with the verdict. A family without a
// client, or a plan that loads nothing, leaves the sizes "not verified" and says why (not an
// error). A client that cannot start (a missing tool) is a runtime error.
Status verify_delivery(BestTable& best, const VerifyOptions& options);

// After a delivered measurement whose verdict is not "ships", the sizes not shown to be above the
// verdict's margin (and any size significantly slower) fall back: a size whose per-size choice is
// not the library's own falls back to it (under the same job-wide part); such a size with nothing
// per size to drop, a plan whose job failed, or a plan with no size to drop that still does not
// ship takes the whole plan back to the defaults. The plan's notes say why. Returns whether the
// plan changed (measure it again).
bool apply_delivered_fallback(BestTable& best);

// The whole plan back to the library's defaults, `why` in its notes.
void fall_back_to_defaults(BestTable& best, const std::string& why);

// Per size, the best config the search measured under the library's own job-wide part, where it
// is not the default config: the per-size choices a job can still load when the certified
// job-wide part does not ship (an Open MPI rules file under the default messaging layer).
std::map<uint64_t, Json> plan_b_choices(const BestTable& best, const Space& space, const std::vector<Trial>& trials);

// The plan under the library's own job-wide part with `choices` per size; false (nothing changed)
// when the plan's job-wide part is not the library's or no choice differs from the defaults.
bool adopt_plan_b(BestTable& best, const std::map<uint64_t, Json>& choices);

// Whether the delivered plan pays: its verdict ships (tables measured before verdicts: no size
// significantly slower). A plan not verified pays (no evidence against it).
bool delivery_pays(const BestTable& best);

// The study's stages after its plan is written (tuner/study.hpp: search, rank, certify, plan):
// verify, then fall back. Each delivered measurement is kept in the study's best.json; where the
// plan does not ship and `fall_back` is set, its doubtful sizes fall back
// (apply_delivered_fallback), the plan's files are written again and it is measured again, at
// most `measurements` times in all; a plan that still does not ship at the last one becomes the
// defaults, so what is exported never went unproven. best.json and the plan's files agree at the
// end.
enum class PlanVerdict {
  not_verified,           // nothing measured: no client, or a plan that loads nothing (`why`)
  pays,                   // the verdict ships
  no_longer_pays,         // it does not ship, and falling back was not asked for
  fell_back_to_defaults,  // it still did not ship at the last measurement: the plan is the defaults now
  job_failed,             // the plan's job measured nothing at some size: the plan is the defaults now
};
struct DeliverOptions {
  VerifyOptions verify;
  int measurements = 1;
  bool fall_back = false;
  // Per size, the search's best config under the library's own job-wide part (plan_b_choices):
  // with `fall_back`, a plan whose job-wide part delivered too little falls back to these, once,
  // and is measured again before it falls back to the defaults; a plan certification left at the
  // defaults is measured with them.
  std::map<uint64_t, Json> plan_b;
  std::function<void(const BestTable&)> on_measured;  // after each measurement, once best.json holds it
  // After the plan changed and its files were written; `again`: it will be measured again.
  std::function<void(bool again)> on_fallback;
};
struct DeliveredPlan {
  PlanVerdict verdict = PlanVerdict::not_verified;
  int measurements = 0;
  int fallbacks = 0;
  std::string why;  // not_verified: why nothing was measured
  bool out_of_time = false;  // the deadline passed before a changed plan could be measured again
};
Expected<DeliveredPlan> verify_and_fall_back(BestTable& best, const DeliverOptions& options);

// The fingerprint fields that differ between a stored study's machine and `now`, one line each
// ("cpu.model: A -> B"); empty when they agree.
std::vector<std::string> fingerprint_drift(const Json& stored_fingerprint, const Json& now_fingerprint);

}  // namespace acceltune
