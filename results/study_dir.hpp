// A study directory read back (study.json, trials.jsonl, best.json): the one loader of every
// command that reads a study, from `best` and `export` to `compare`, `report` and bring-up.
#pragma once

#include <string>
#include <vector>

#include "tuner/best.hpp"
#include "tuner/space.hpp"
#include "tuner/trial.hpp"

namespace acceltune {

// A study directory as a whole: the record, the space, the trials and the best table. A study
// that is still running (or was stopped) has no best.json yet; its table is computed from the
// trials read so far.
struct StudyData {
  std::string dir;
  Json study = Json::object();  // study.json
  Space space;
  Workload workload;
  std::vector<Trial> trials;
  BestTable best;  // best.study is `study`, best.dir is `dir`
  bool finished = false;  // best.json was written
  int torn = 0;           // a torn last line of trials.jsonl that was skipped
  // The unit of the values: "GB/s" for transfers, the landscape's for replay.
  std::string unit;
};

// What to read of a study.
enum class StudyParts {
  all,   // everything (compare, report, bring-up)
  best,  // the best table (best, export, exec, verify): with a best.json only `study`, `best`,
         // `finished` and best.json's `unit` are read; the space is not parsed, so a study that an
         // upgrade's param tables no longer match still exports. Without one, as `all`.
};

// Errors are input errors naming the file: not a study directory, a study.json without its space
// or workload, a best.json or a space that does not parse.
Expected<StudyData> load_study_dir(const std::string& dir, StudyParts parts = StudyParts::all);

}  // namespace acceltune
