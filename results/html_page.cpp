// The pieces both HTML pages use (declared in html_page.hpp): the page's frame and inline CSS,
// escaping and number cells, the fingerprint in one line, the message-size axis of the plots; and
// write_page, which puts a page on disk whole.
#include "results/html_page.hpp"

#include <algorithm>
#include <cmath>

#include "results/compare.hpp"
#include "results/report_html.hpp"
#include "probe/fingerprint.hpp"
#include "tuner/atomic_file.hpp"

namespace acceltune {

namespace html_page {

namespace {

using svg::escape;

const char* kStyle = R"~(
body{font-family:sans-serif;margin:24px auto;max-width:1100px;color:#222;background:#fff;line-height:1.4}
h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;border-bottom:1px solid #ddd;padding-bottom:3px;margin-top:28px}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
th,td{border:1px solid #d4d4d4;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums}
table.kv th{width:170px}
.warn{background:#fff4d6;border:1px solid #e0b94a;padding:6px 10px;margin:6px 0;font-size:13px}
.note{color:#555;font-size:13px}
figure{margin:8px 0}figcaption{font-size:12px;color:#444;max-width:900px}
code{font-size:12px;background:#f6f6f6;padding:0 3px;overflow-wrap:anywhere}
.sig{color:#1a7f37;font-weight:bold}.insig{color:#777}.slow{color:#b42318;font-weight:bold}
details{font-size:13px;margin:6px 0}
td.headline{min-width:120px}
section{overflow-x:auto}
)~";

}  // namespace

std::string h(const std::string& s) { return escape(s); }

std::string verdict_html(const Json& e) {
  if (!e.is_object() || !e.contains("efficiency") || !e["efficiency"].is_number()) {
    const std::string why = e.is_object() && e.contains("why_none") && e["why_none"].is_string() ? e["why_none"].get<std::string>() : "";
    // Only the verdict keeps to one line: the reason wraps with its column.
    return "<span class=\"insig\">none</span><span class=\"note\">: " + escape(why) + "</span>";
  }
  const std::string verdict = e.value("verdict", "");
  const char* cls = verdict == "good" ? "sig" : verdict == "investigate" ? "slow" : "";
  return fmt::format("<span class=\"{}\">{:.0f}% {}</span>", cls, e["efficiency"].get<double>() * 100, escape(verdict));
}

std::string fnum(const std::optional<double>& v) { return v ? format_number(*v) : "-"; }

std::string ratio_text(const std::optional<double>& v) { return v ? fmt::format("{:.2f}x", *v) : "-"; }

std::string page_start(const std::string& title) {
  return fmt::format("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n"
                     "<style>{}</style>\n</head>\n<body>\n",
                     h(title), kStyle);
}

std::string page_end() {
  return fmt::format("<footer class=\"note\"><p>Written by acceltune {}. The page is self-contained: inline CSS and "
                     "SVG, nothing loaded from elsewhere.</p></footer>\n</body>\n</html>\n",
                     h(acceltune_version()));
}

std::string json_text(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// Host, CPU, memory, OS and the id in one line, for headers.
std::string fingerprint_summary(const Json& fp) {
  if (!fp.is_object()) return "(none)";
  std::vector<std::string> parts;
  auto str = [&](const Json& j, const char* k) { return j.contains(k) && !j[k].is_null() ? json_text(j[k]) : ""; };
  if (!str(fp, "id").empty()) parts.push_back("id " + str(fp, "id"));
  if (!str(fp, "host").empty()) parts.push_back("host " + str(fp, "host"));
  const Json cpu = fp.value("cpu", Json::object());
  if (cpu.is_object()) {
    std::string c = str(cpu, "model");
    if (cpu.contains("logical_cores")) {
      c += fmt::format(", {} cores", json_text(cpu["logical_cores"]));
      if (cpu.contains("usable_cores") && cpu["usable_cores"] != cpu["logical_cores"]) {
        c += fmt::format(" ({} usable)", json_text(cpu["usable_cores"]));
      }
    }
    if (!c.empty()) parts.push_back(c);
  }
  if (fp.contains("memory_bytes") && fp["memory_bytes"].is_number()) {
    parts.push_back(fmt::format("{:.1f} GiB memory", fp["memory_bytes"].get<double>() / (1024.0 * 1024 * 1024)));
  }
  const Json os = fp.value("os", Json::object());
  if (os.is_object()) {
    std::string o = str(os, "name");
    if (!str(os, "kernel").empty()) o += (o.empty() ? "" : ", ") + str(os, "kernel");
    if (!o.empty()) parts.push_back(o);
  }
  // Sections that other probes add (NUMA nodes, NICs, GPUs, RDMA devices): their sizes.
  for (const auto& [k, v] : fp.items()) {
    if (v.is_array() && k != "flags" && !v.empty() && v.front().is_object()) {
      parts.push_back(fmt::format("{} {}", v.size(), k));
    } else if (v.is_array() && v.empty() && (k == "gpus" || k == "nics" || k == "rdma")) {
      parts.push_back(fmt::format("no {}", k));
    }
  }
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

bool wide_range(const std::vector<double>& v) {
  double lo = INFINITY, hi = 0;
  for (double x : v) {
    if (std::isfinite(x) && x > 0) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  }
  return hi > 0 && lo < INFINITY && hi / lo > 20;
}

namespace {

bool any_size_zero(const std::vector<uint64_t>& sizes) {
  return std::find(sizes.begin(), sizes.end(), uint64_t{0}) != sizes.end();
}

}  // namespace

// The x axis of a value-versus-size plot: log2 bytes, or one category for size-less kernels.
svg::Axis size_axis(const std::vector<uint64_t>& sizes) {
  svg::Axis x;
  x.label = "message size (bytes, log2 scale)";
  x.scale = svg::Scale::log2_bytes;
  if (any_size_zero(sizes)) {
    x.label = "message size (none: the kernel is size-less)";
    x.scale = svg::Scale::category;
    x.categories = {"-"};
  }
  return x;
}

double size_x(const svg::Axis& x, uint64_t bytes) {
  return x.scale == svg::Scale::category ? 0.0 : static_cast<double>(bytes);
}

svg::Point point_with_bar(double x, double y, double p10, double p90) {
  svg::Point p{x, y};
  if (std::isfinite(p10) && std::isfinite(p90)) {
    p.lo = std::min(p10, p90);
    p.hi = std::max(p10, p90);
  }
  return p;
}

// A gain and its 95% interval, "2.47x [2.20, 2.77]".
std::string interval_text(double ratio, const std::optional<double>& low, const std::optional<double>& high) {
  return fmt::format("{:.2f}x [{}, {}]", ratio, low && std::isfinite(*low) ? fmt::format("{:.2f}", *low) : "-",
                     high && std::isfinite(*high) ? fmt::format("{:.2f}", *high) : "-");
}

}  // namespace html_page

Status write_page(const std::string& path, const std::string& html) {
  Status st = write_file_atomically(path, html, {.what = "the page"});
  if (!st && st.error().kind == ErrorKind::input) return input_error("{}; choose another file", st.error().message);
  return st;
}

}  // namespace acceltune
