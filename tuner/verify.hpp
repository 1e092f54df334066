// Delivered certification: the plan of a study loaded the way a job loads it (tuner/delivery.hpp),
// interleaved with the library's defaults, per size a paired-ratio interval as in certification.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tuner/best.hpp"
#include "tuner/delivery.hpp"

namespace acceltune {

struct VerifyOptions {
  int rounds = 5;  // defaults/plan pairs, interleaved A B, B A, ...
  std::function<void(int done, int total)> progress;
  std::string fingerprint_id;  // the machine measuring it (probe_fingerprint's "id"), kept with the delivery
};

// Measures each of `arms` against `defaults` through one client session, interleaved round by
// round (the order rotates so no arm always runs first): per arm, per size, the paired-ratio
// interval as a Delivered. Sizes no round measured are absent. Stops early on cancellation.
Expected<std::vector<std::map<uint64_t, Delivered>>> compare_arms(DeliverySession& session, const DeliveryArm& defaults,
                                                                  const std::vector<DeliveryArm>& arms,
                                                                  const std::vector<uint64_t>& sizes,
                                                                  const VerifyOptions& options);

// The defaults arm of a study: only the space's pinned context, the library's job-wide defaults.
DeliveryArm defaults_arm(const BestTable& best);

// Measures the plan of `best` (read with its study record and directory) through its family's
// plain client and fills every size's `delivered` and the table's `delivery`. A family without a
// client, or a plan that loads nothing, leaves the sizes "not verified" and says why (not an
// error). A client that cannot start (a missing tool) is a runtime error.
Status verify_delivery(BestTable& best, const VerifyOptions& options);

// After a delivered measurement, the sizes where the plan costs the job time fall back: a size
// whose per-size choice is not the library's own falls back to it (under the same job-wide part);
// a slower size with nothing per size to drop takes the job-wide part back to the defaults, for
// every size. The plan's notes say why. Returns whether the plan changed (measure it again).
bool apply_delivered_fallback(BestTable& best);

// Whether the delivered plan pays: no size significantly slower than the defaults.
bool delivery_pays(const BestTable& best);

// The study's stages after its plan is written (tuner/study.hpp: search, rank, certify, plan):
// verify, then fall back. Each delivered measurement is kept in the study's best.json; where the
// plan costs the job time and `fall_back` is set, the slower sizes fall back
// (apply_delivered_fallback), the plan's files are written again and it is measured again, at
// most `measurements` times in all.
enum class PlanVerdict {
  not_verified,          // nothing measured: no client, or a plan that loads nothing (`why`)
  pays,                  // no size significantly slower than the defaults
  no_longer_pays,        // some size slower, and nothing (more) to fall back to
  fell_back_unmeasured,  // the last measurement made it fall back again; that plan is not measured
};
struct DeliverOptions {
  VerifyOptions verify;
  int measurements = 1;
  bool fall_back = false;
  std::function<void(const BestTable&)> on_measured;  // after each measurement, once best.json holds it
  // After the plan changed and its files were written; `again`: it will be measured again.
  std::function<void(bool again)> on_fallback;
};
struct DeliveredPlan {
  PlanVerdict verdict = PlanVerdict::not_verified;
  int measurements = 0;
  int fallbacks = 0;
  std::string why;  // not_verified: why nothing was measured
};
Expected<DeliveredPlan> verify_and_fall_back(BestTable& best, const DeliverOptions& options);

// The fingerprint fields that differ between a stored study's machine and `now`, one line each
// ("cpu.model: A -> B"); empty when they agree.
std::vector<std::string> fingerprint_drift(const Json& stored_fingerprint, const Json& now_fingerprint);

}  // namespace acceltune
