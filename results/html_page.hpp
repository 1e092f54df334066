// The pieces both HTML pages (report_html.cpp: one study; compare_html.cpp: studies side by side)
// use: the page's frame with its inline CSS, escaping and number cells, the fingerprint in one
// line, and the message-size axis of their value-versus-size plots. Private to results/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "results/svg.hpp"
#include "tuner/value.hpp"

namespace acceltune::html_page {

// Escapes a string from a study for the page.
std::string h(const std::string& s);

std::string fnum(const std::optional<double>& v);

std::string ratio_text(const std::optional<double>& v);

// The page's head with its inline style, up to the opening <body>; and its footer and end.
std::string page_start(const std::string& title);
std::string page_end();

std::string json_text(const Json& v);

// An efficiency's verdict as a coloured span: "97% good" (probe/links.hpp's Efficiency::to_json),
// or "none: WHY" when it has none.
std::string verdict_html(const Json& efficiency);

// Host, CPU, memory, OS and the id in one line, for headers.
std::string fingerprint_summary(const Json& fp);

bool wide_range(const std::vector<double>& v);

// The x axis of a value-versus-size plot: log2 bytes, or one category for size-less kernels.
svg::Axis size_axis(const std::vector<uint64_t>& sizes);

double size_x(const svg::Axis& x, uint64_t bytes);

svg::Point point_with_bar(double x, double y, double p10, double p90);

// A gain and its 95% interval, "2.47x [2.20, 2.77]".
std::string interval_text(double ratio, const std::optional<double>& low, const std::optional<double>& high);

}  // namespace acceltune::html_page
