// Self-contained HTML pages of studies: inline CSS and inline SVG only, no script, font, image or
// link to anything outside the file, and every string that comes from a study escaped.
#pragma once

#include <string>
#include <vector>

#include "results/compare.hpp"

namespace acceltune {

// `acceltune report`: a header (space, kernel, fingerprint, trials, dates), the best table,
// bandwidth versus message size for the default and the tuned configs with p10-p90 error bars,
// search convergence, each param's effect, and the failed trials. A study still running (no
// best.json) or with failed trials renders too.
std::string report_html(const StudyData& study);

// A study's best table, its value-versus-size plot and its failed trials, for a page of several
// studies (`acceltune bringup`'s report): every id starts with `id_prefix`.
std::string study_sections_html(const StudyData& study, const std::string& id_prefix);

// Every link of a probe with its ceiling, basis, state and finding (probe/links.hpp).
std::string links_table_html(const Json& probe);

// `acceltune bringup`'s report: the node, a row per family and study with certified and delivered
// gains, what was skipped and why, how to load the bundle, the merged environment and its notes,
// then each study's sections. `summary` is the bundle's bringup.json.
std::string bringup_html(const Json& summary, const std::vector<StudyData>& studies);

// `acceltune compare --html`: the comparison's tables, its warnings, and one plot of every
// study's default and best value versus message size.
std::string compare_html(const Comparison& comparison, const std::vector<StudyData>& studies);

// Writes a page through a temporary file and a rename, so a reader never sees half of one.
Status write_page(const std::string& path, const std::string& html);

}  // namespace acceltune
