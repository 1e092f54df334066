// The definitions behind results/study_dir.hpp: a study directory read back.
#include "results/study_dir.hpp"

#include <memory>

#include "tuner/family.hpp"
#include "tuner/store.hpp"
#include "tuner/study.hpp"

namespace acceltune {

Expected<StudyData> load_study_dir(const std::string& dir, StudyParts parts) {
  ACCELTUNE_TRY_ASSIGN(std::unique_ptr<ResultStore> store, open_store("dir", dir));
  if (!store->has_study()) return input_error("{}: not a study directory (no study.json)", dir);
  StudyData d;
  d.dir = dir;
  ACCELTUNE_TRY_ASSIGN(d.study, store->read_study());
  auto best_json = store->read_best();
  if (best_json) {
    auto b = BestTable::from_json(*best_json);
    if (!b) return input_error("{}/best.json: {}", dir, b.error().message);
    d.best = std::move(b).value();
    d.finished = true;
  }
  if (parts == StudyParts::all || !d.finished) {
    if (!d.study.is_object() || !d.study.contains("space") || !d.study.contains("workload")) {
      return input_error("{}/study.json: lacks 'space' or 'workload'; is this a study written by acceltune search?",
                         dir);
    }
    ACCELTUNE_TRY_ASSIGN(d.space, Space::from_definition(d.study["space"], dir + "/study.json", dir));
    auto w = Workload::from_json(d.study["workload"]);
    if (!w) return input_error("{}/study.json: {}", dir, w.error().message);
    d.workload = std::move(w).value();
    ACCELTUNE_TRY_ASSIGN(d.trials, load_trials(*store, d.space, &d.torn));
    d.unit = unit_of(d.space);
  }
  if (!d.finished) {
    d.best = compute_recommended_best(d.space, d.workload, d.trials, d.unit, d.study.value("seed", uint64_t{1}));
  } else if (!d.best.unit.empty()) {
    d.unit = d.best.unit;
  }
  d.best.study = d.study;
  d.best.dir = dir;
  return d;
}

}  // namespace acceltune
