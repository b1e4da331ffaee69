#include "ccsynth/plan/html_report.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <string_view>

#include <fmt/format.h>

#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/plan/report.h"
#include "ccsynth/plan/trace.h"
#include "ccsynth/sim/simulate.h"

namespace ccsynth::plan {
namespace {

// ---------------------------------------------------------------------------------------------
// Text and colours

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// Okabe & Ito's palette (colour-blind safe), black first for the reference.
constexpr std::array<const char*, 8> kCandidateColours = {
    "#000000", "#E69F00", "#0072B2", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442"};
// Dash patterns repeat the distinction for print and monochrome screens.
constexpr std::array<const char*, 4> kDashes = {"", "6 3", "2 3", "8 3 2 3"};

std::string candidate_colour(size_t i) { return kCandidateColours[i % kCandidateColours.size()]; }
std::string candidate_dash(size_t i) { return kDashes[(i / 2) % kDashes.size()]; }

// Viridis at 0, 0.25, 0.5, 0.75, 1, interpolated linearly: utilization 0..1 to a colour.
std::string utilization_colour(double u) {
  static constexpr std::array<std::array<double, 3>, 5> kStops = {
      {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}}};
  const double x = std::clamp(u, 0.0, 1.0) * (kStops.size() - 1);
  const size_t i = std::min(static_cast<size_t>(x), kStops.size() - 2);
  const double t = x - static_cast<double>(i);
  std::array<int, 3> rgb{};
  for (size_t k = 0; k < 3; ++k) {
    rgb[k] = static_cast<int>(std::lround(kStops[i][k] + t * (kStops[i + 1][k] - kStops[i][k])));
  }
  return fmt::format("#{:02x}{:02x}{:02x}", rgb[0], rgb[1], rgb[2]);
}

// Colours of step kinds in the timeline (Okabe-Ito): sends, receives, reductions, copies.
std::string step_colour(StepType type) {
  switch (type) {
    case StepType::kSend: return "#0072B2";
    case StepType::kRecv: return "#56B4E9";
    case StepType::kRecvCopySend: return "#009E73";
    case StepType::kRecvReduceSend:
    case StepType::kRecvReduceCopy:
    case StepType::kRecvReduceCopySend:
    case StepType::kReduce: return "#D55E00";
    case StepType::kCopy: return "#E69F00";
    case StepType::kNop: break;
  }
  return "#999999";
}

std::string number(double value) { return fmt::format("{:.4g}", value); }
// Axis labels: plain digits up to a million ("10000", not "1e+04").
std::string tick_label(double value) { return fmt::format("{:.7g}", value); }
std::string percent(double fraction) { return fmt::format("{:.1f}%", 100.0 * fraction); }

// ---------------------------------------------------------------------------------------------
// Charts

// Maps [lo, hi] (log10 when `log`) onto the pixel range [from, to].
struct Scale {
  double lo = 0, hi = 1, from = 0, to = 1;
  bool log = false;
  double operator()(double v) const {
    const double a = log ? std::log10(lo) : lo;
    const double b = log ? std::log10(hi) : hi;
    const double x = log ? std::log10(std::max(v, lo)) : v;
    return b == a ? (from + to) / 2 : from + (x - a) / (b - a) * (to - from);
  }
};

// One curve: points (size, value) with a tooltip each.
struct Series {
  Series(std::string name, std::string css_class, std::string colour, std::string dash)
      : name(std::move(name)),
        css_class(std::move(css_class)),
        colour(std::move(colour)),
        dash(std::move(dash)) {}
  std::string name;
  std::string css_class;  // "curve" for candidates, "bound" for the lower bound
  std::string colour;
  std::string dash;
  std::vector<double> x;
  std::vector<double> y;
  std::vector<std::string> tips;
};

struct Chart {
  std::string id;
  std::string title;
  std::string y_label;
  bool log_y = false;
  std::vector<int64_t> sizes;
  std::vector<Series> series;
};

constexpr double kChartWidth = 640, kChartHeight = 360;
constexpr double kLeft = 72, kRight = 16, kTop = 28, kBottom = 52;

// Powers of 10 covering [lo, hi] for a log axis, or about five round steps for a linear one.
std::vector<double> ticks(double lo, double hi, bool log) {
  std::vector<double> out;
  if (log) {
    for (double t = std::pow(10.0, std::floor(std::log10(lo))); t <= hi * 1.0001; t *= 10) {
      if (t >= lo * 0.9999) out.push_back(t);
    }
    if (out.size() < 2) out = {lo, hi};
    return out;
  }
  const double raw = (hi - lo) / 5;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw > 0 ? raw : 1)));
  double step = magnitude;
  for (const double m : {2.0, 5.0, 10.0}) {
    if (step < raw) step = m * magnitude;
  }
  for (double t = std::ceil(lo / step) * step; t <= hi * 1.0001; t += step) out.push_back(t);
  return out;
}

std::pair<double, double> y_range(const Chart& chart) {
  double lo = std::numeric_limits<double>::infinity();
  double hi = 0;
  for (const Series& s : chart.series) {
    for (const double v : s.y) {
      if (v > 0) lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  if (!(hi > 0)) return {1, 10};
  if (chart.log_y) return {std::pow(10.0, std::floor(std::log10(lo))), hi * 1.2};
  return {0, hi * 1.1};
}

std::string axes(const Chart& chart, const Scale& sx, const Scale& sy) {
  const double bottom = kChartHeight - kBottom;
  std::string out = fmt::format(
      "<g class=\"axes\"><line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>"
      "<line x1=\"{0}\" y1=\"{3}\" x2=\"{0}\" y2=\"{1}\"/>",
      kLeft, bottom, kChartWidth - kRight, kTop);
  // x: every size while they fit, else every other one.
  const size_t every = chart.sizes.size() > 10 ? 2 : 1;
  for (size_t i = 0; i < chart.sizes.size(); i += every) {
    const double x = sx(static_cast<double>(chart.sizes[i]));
    out += fmt::format(
        "<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>",
        x, kTop, bottom, bottom + 16, format_bytes(chart.sizes[i]));
  }
  for (const double t : ticks(sy.lo, sy.hi, chart.log_y)) {
    const double y = sy(t);
    out += fmt::format(
        "<line class=\"grid\" x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>",
        kLeft, y, kChartWidth - kRight, kLeft - 6, y + 4, tick_label(t));
  }
  out += fmt::format(
      "<text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">message size per rank "
      "(bytes)</text>",
      (kLeft + kChartWidth - kRight) / 2, kChartHeight - 12);
  out += fmt::format(
      "<text class=\"label\" transform=\"translate(16 {}) rotate(-90)\" "
      "text-anchor=\"middle\">{}</text></g>",
      (kTop + bottom) / 2, escape(chart.y_label));
  return out;
}

std::string curve(const Series& s, const Scale& sx, const Scale& sy) {
  std::string points;
  std::string marks;
  for (size_t i = 0; i < s.x.size(); ++i) {
    const double x = sx(s.x[i]);
    const double y = sy(s.y[i]);
    points += fmt::format("{:.1f},{:.1f} ", x, y);
    marks += fmt::format(
        "<circle class=\"point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"><title>{}"
        "</title></circle>",
        x, y, s.colour, escape(s.tips[i]));
  }
  return fmt::format(
      "<g class=\"series\" data-name=\"{0}\"><title>{0}</title><polyline class=\"{1}\" "
      "points=\"{2}\" stroke=\"{3}\" stroke-dasharray=\"{4}\" fill=\"none\"/>{5}</g>",
      escape(s.name), s.css_class, points, s.colour, s.dash, marks);
}

std::string legend(const std::vector<Series>& series) {
  std::string out = "<ul class=\"legend\">";
  for (const Series& s : series) {
    out += fmt::format(
        "<li><svg width=\"28\" height=\"10\" aria-hidden=\"true\"><line x1=\"0\" y1=\"5\" "
        "x2=\"28\" y2=\"5\" stroke=\"{}\" stroke-width=\"2.5\" stroke-dasharray=\"{}\"/></svg>"
        "{}</li>",
        s.colour, s.dash, escape(s.name));
  }
  return out + "</ul>";
}

std::string chart_svg(const Chart& chart) {
  const auto [lo, hi] = y_range(chart);
  const Scale sx{static_cast<double>(chart.sizes.front()), static_cast<double>(chart.sizes.back()),
                 kLeft + 10, kChartWidth - kRight - 10, true};
  const Scale sy{lo, hi, kChartHeight - kBottom, kTop, chart.log_y};
  std::string out = fmt::format(
      "<figure><svg id=\"{}\" class=\"chart\" viewBox=\"0 0 {} {}\" role=\"img\" "
      "aria-label=\"{}\"><title>{}</title>",
      chart.id, kChartWidth, kChartHeight, escape(chart.title), escape(chart.title));
  out += axes(chart, sx, sy);
  for (const Series& s : chart.series) out += curve(s, sx, sy);
  return out + "</svg><figcaption>" + escape(chart.title) + "</figcaption>" + legend(chart.series) +
         "</figure>";
}

// ---------------------------------------------------------------------------------------------
// The candidates' numbers

struct Verified {
  std::vector<std::string> names;
  std::vector<const Evaluated*> evaluated;
  std::vector<size_t> colour;  // index into the palette, stable across the page
};

Verified verified_of(const std::vector<ReportCandidate>& candidates) {
  Verified out;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Evaluated* e = candidates[i].evaluated;
    if (e == nullptr || !e->ok() || e->results.empty()) continue;
    out.names.push_back(candidates[i].name);
    out.evaluated.push_back(e);
    out.colour.push_back(i);
  }
  return out;
}

double bound_busbw_gbps(const Collective& collective, const SizedResult& r) {
  if (!(r.lower_bound_us > 0)) return 0;
  const double algbw = sim::nccl_size_bytes(collective.kind, collective.num_ranks, r.bytes) /
                       (r.lower_bound_us * 1e3);
  return algbw * sim::bus_factor(collective.kind, collective.num_ranks);
}

std::vector<int64_t> sizes_of(const Verified& v) {
  std::vector<int64_t> out;
  for (const SizedResult& r : v.evaluated.front()->results) out.push_back(r.bytes);
  return out;
}

// Time (log-log) or busbw (log-linear) against size: one curve per candidate, and the bound.
Chart size_chart(const Collective& collective, const Verified& v, bool busbw) {
  Chart chart;
  chart.id = busbw ? "busbw-chart" : "time-chart";
  chart.title = busbw ? "Bus bandwidth against size (higher is better)"
                      : "Simulated time against size (lower is better)";
  chart.y_label = busbw ? "busbw (GB/s)" : "time (µs)";
  chart.log_y = !busbw;
  chart.sizes = sizes_of(v);
  for (size_t k = 0; k < v.evaluated.size(); ++k) {
    Series s{v.names[k], "curve", candidate_colour(v.colour[k]), candidate_dash(v.colour[k])};
    for (const SizedResult& r : v.evaluated[k]->results) {
      s.x.push_back(static_cast<double>(r.bytes));
      s.y.push_back(busbw ? r.busbw_gbps : r.time_us);
      s.tips.push_back(fmt::format("{} at {}: {} µs, busbw {} GB/s, {}x the bound", v.names[k],
                                   format_bytes(r.bytes), number(r.time_us), number(r.busbw_gbps),
                                   number(r.ratio_to_bound())));
    }
    chart.series.push_back(std::move(s));
  }
  Series bound{"lower bound", "bound", "#777777", "1 4"};
  for (const SizedResult& r : v.evaluated.front()->results) {
    const double value = busbw ? bound_busbw_gbps(collective, r) : r.lower_bound_us;
    bound.x.push_back(static_cast<double>(r.bytes));
    bound.y.push_back(value);
    bound.tips.push_back(fmt::format("lower bound at {}: {} {}", format_bytes(r.bytes),
                                     number(value), busbw ? "GB/s" : "µs"));
  }
  chart.series.push_back(std::move(bound));
  return chart;
}

// Per size: every candidate's time and busbw (exact values in data attributes), the bound and
// the fastest.
std::string results_table_html(const Verified& v) {
  std::string out =
      "<table id=\"results\"><caption>Simulated time (µs) and busbw (GB/s) per size; the "
      "fastest in bold</caption><thead><tr><th scope=\"col\">size</th>";
  for (const std::string& name : v.names) {
    out +=
        fmt::format("<th scope=\"col\">{0} µs</th><th scope=\"col\">{0} GB/s</th>", escape(name));
  }
  out +=
      "<th scope=\"col\">bound µs</th><th scope=\"col\">best</th><th scope=\"col\">vs "
      "bound</th><th scope=\"col\">vs nccl</th></tr></thead><tbody>";
  const std::vector<BestAtSize> best = best_per_size(v.names, v.evaluated);
  for (size_t i = 0; i < best.size(); ++i) {
    out += fmt::format("<tr data-bytes=\"{}\"><th scope=\"row\">{}</th>", best[i].bytes,
                       format_bytes(best[i].bytes));
    for (size_t k = 0; k < v.evaluated.size(); ++k) {
      const SizedResult& r = v.evaluated[k]->results[i];
      const char* weight = static_cast<int>(k) == best[i].best ? " class=\"best\"" : "";
      out += fmt::format(
          "<td{0} data-candidate=\"{1}\" data-time-us=\"{2:.17g}\">{3:.3f}</td>"
          "<td{0} data-candidate=\"{1}\" data-busbw-gbps=\"{4:.17g}\">{5:.2f}</td>",
          weight, escape(v.names[k]), r.time_us, r.time_us, r.busbw_gbps, r.busbw_gbps);
    }
    out += fmt::format(
        "<td data-bound-us=\"{:.17g}\">{:.3f}</td><td>{}</td><td>{:.2f}x</td><td>{}</td></tr>",
        best[i].lower_bound_us, best[i].lower_bound_us, escape(v.names[best[i].best]),
        best[i].ratio_to_bound,
        best[i].speedup_vs_nccl > 0 ? fmt::format("{:.2f}x", best[i].speedup_vs_nccl) : "-");
  }
  return out + "</tbody></table>";
}

// ---------------------------------------------------------------------------------------------
// Verification and synthesis

std::string verdict(const verify::VerifyReport& report, bool checked) {
  if (!checked) return "<span class=\"na\">not checked</span>";
  if (report.ok()) return "<span class=\"ok\">verified</span>";
  return fmt::format("<span class=\"bad\" title=\"{}\">{} violation(s)</span>",
                     escape(report.summary()), report.violations.size());
}

std::string stats_cell(const ReportCandidate& c) {
  if (c.stats.is_null() || c.stats.empty()) return "";
  return "<details><summary>statistics</summary><pre>" + escape(c.stats.dump(2)) +
         "</pre></details>";
}

std::string candidates_table(const std::vector<ReportCandidate>& candidates) {
  std::string out =
      "<table id=\"candidates\"><caption>Candidates: how each was made and checked"
      "</caption><thead><tr><th scope=\"col\">candidate</th><th scope=\"col\">synthesis</th>"
      "<th scope=\"col\">seconds</th><th scope=\"col\">algorithm</th><th "
      "scope=\"col\">program</th><th scope=\"col\">steps</th><th scope=\"col\">sends</th><th "
      "scope=\"col\">threadblocks</th><th scope=\"col\">compiled</th><th "
      "scope=\"col\">statistics</th></tr></thead><tbody>";
  for (const ReportCandidate& c : candidates) {
    out += fmt::format(
        "<tr data-candidate=\"{0}\"><th scope=\"row\">{0}</th><td>{1}</td>"
        "<td>{2:.2f}</td>",
        escape(c.name),
        escape(c.evaluated ? (c.status.empty() ? "found" : c.status) : "skipped: " + c.skipped),
        c.synthesis_seconds);
    if (c.evaluated == nullptr) {
      out += "<td></td><td></td><td></td><td></td><td></td><td></td>";
    } else {
      const Evaluated& e = *c.evaluated;
      out += fmt::format("<td class=\"verdict\">{}</td><td class=\"verdict\">{}</td>",
                         verdict(e.algorithm_report, !e.algorithm.ops.empty()),
                         verdict(e.program_report, e.compiled));
      out += fmt::format("<td>{}</td><td>{}</td><td>{}</td><td>{}</td>", e.algorithm.num_steps(),
                         e.algorithm.ops.size(), e.program.total_threadblocks(),
                         escape(variant_description(e.options)));
    }
    out += "<td>" + stats_cell(c) + "</td></tr>";
  }
  return out + "</tbody></table>";
}

// ---------------------------------------------------------------------------------------------
// Topology

struct Point {
  double x = 0, y = 0;
};

struct Layout {
  std::vector<Point> rank;
  std::vector<std::pair<Point, Point>> node_box;  // top-left, bottom-right
  std::vector<Point> switch_at;
  double width = 0, height = 0;
};

std::vector<std::vector<int>> nodes_of(const Topology& topology) {
  if (!topology.nodes.empty()) return topology.nodes;
  std::vector<int> all(topology.num_ranks);
  for (int r = 0; r < topology.num_ranks; ++r) all[r] = r;
  return {all};
}

// Nodes on a grid, each node's ranks on a circle; a switch inside one node sits at its
// centre, a switch across nodes in a row under the grid.
Layout layout(const Topology& topology) {
  const std::vector<std::vector<int>> nodes = nodes_of(topology);
  size_t largest = 1;
  for (const auto& node : nodes) largest = std::max(largest, node.size());
  const double radius = std::max(48.0, 30.0 * static_cast<double>(largest) / std::numbers::pi);
  const double box = 2 * radius + 56;
  const int columns = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(nodes.size()))));
  const int rows = static_cast<int>((nodes.size() + columns - 1) / columns);
  Layout out;
  out.rank.resize(topology.num_ranks);
  for (size_t n = 0; n < nodes.size(); ++n) {
    const double left = 20 + static_cast<double>(n % columns) * (box + 24);
    const double top = 20 + static_cast<double>(n / columns) * (box + 24);
    out.node_box.push_back({{left, top}, {left + box, top + box}});
    const Point centre{left + box / 2, top + box / 2};
    for (size_t i = 0; i < nodes[n].size(); ++i) {
      const double angle =
          -std::numbers::pi / 2 + 2 * std::numbers::pi * static_cast<double>(i) / nodes[n].size();
      const double r = nodes[n].size() == 1 ? 0 : radius;
      const int rank = nodes[n][i];
      if (rank >= 0 && rank < topology.num_ranks) {
        out.rank[rank] = {centre.x + r * std::cos(angle), centre.y + r * std::sin(angle)};
      }
    }
  }
  out.width = 40 + columns * (box + 24);
  double below = 20 + rows * (box + 24);
  const size_t across =
      std::count_if(topology.switches.begin(), topology.switches.end(), [&](const Switch& sw) {
        return !sw.ranks.empty() && !std::all_of(sw.ranks.begin(), sw.ranks.end(), [&](int r) {
          return topology.node_of(r) == topology.node_of(sw.ranks.front());
        });
      });
  size_t placed = 0;
  for (const Switch& sw : topology.switches) {
    const int node = sw.ranks.empty() ? 0 : topology.node_of(sw.ranks.front());
    const bool inside = std::all_of(sw.ranks.begin(), sw.ranks.end(),
                                    [&](int r) { return topology.node_of(r) == node; });
    if (inside && node < static_cast<int>(out.node_box.size())) {
      const auto& [a, b] = out.node_box[node];
      out.switch_at.push_back({(a.x + b.x) / 2, (a.y + b.y) / 2});
    } else {
      out.switch_at.push_back(
          {out.width * static_cast<double>(placed + 1) / static_cast<double>(across + 1),
           below + 30});
      ++placed;
    }
  }
  out.height = below + (across > 0 ? 70 : 0);
  return out;
}

// Usage indices of the switch ports (SimResult::links after the topology's links): per switch
// and member rank, {egress, ingress}; the order is Network::usage()'s.
std::vector<std::vector<std::pair<int, int>>> port_usage(const Topology& topology) {
  std::vector<std::vector<std::pair<int, int>>> out(topology.switches.size());
  int next = static_cast<int>(topology.links.size());
  for (size_t s = 0; s < topology.switches.size(); ++s) {
    const Switch& sw = topology.switches[s];
    out[s].assign(sw.ranks.size(), {-1, -1});
    const std::vector<std::vector<int>> ports = sw.port_members();
    std::vector<std::pair<int, int>> of_port(ports.size(), {-1, -1});
    for (size_t p = 0; p < ports.size(); ++p) {
      const int r = ports[p].empty() ? -1 : ports[p].front();
      if (r < 0 || r >= topology.num_ranks) continue;
      of_port[p] = {next, next + 1};
      next += 2;
    }
    for (size_t m = 0; m < sw.ranks.size(); ++m) out[s][m] = of_port[sw.port_of_member(m)];
  }
  return out;
}

double width_of(double utilization) { return 1.5 + 5.0 * std::clamp(utilization, 0.0, 1.0); }

std::string link_edges(const Topology& topology, const Layout& at, const sim::SimResult& sim) {
  std::string out;
  for (size_t i = 0; i < topology.links.size(); ++i) {
    const Link& link = topology.links[i];
    if (link.src < 0 || link.dst < 0 || link.src >= topology.num_ranks ||
        link.dst >= topology.num_ranks) {
      continue;
    }
    const Point a = at.rank[link.src];
    const Point b = at.rank[link.dst];
    // Shifted to the right of its direction so that a -> b and b -> a both show.
    const double dx = b.x - a.x, dy = b.y - a.y;
    const double length = std::max(1e-9, std::hypot(dx, dy));
    const double ox = -dy / length * 3.0, oy = dx / length * 3.0;
    const sim::LinkUsage& u = sim.links[i];
    out += fmt::format(
        "<line class=\"link\" data-link=\"{}\" data-utilization=\"{:.6g}\" x1=\"{:.1f}\" "
        "y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"{:.2f}\"><title>"
        "{} ({}, {} lane{}): busy {} µs, utilization {}</title></line>",
        i, u.utilization, a.x + ox, a.y + oy, b.x + ox, b.y + oy, utilization_colour(u.utilization),
        width_of(u.utilization), link_name(u), escape(link.kind), link.lanes,
        link.lanes == 1 ? "" : "s", number(u.busy_us), percent(u.utilization));
  }
  return out;
}

std::string switch_marks(const Topology& topology, const Layout& at, const sim::SimResult& sim) {
  std::string edges;
  std::string boxes;
  const auto ports = port_usage(topology);
  for (size_t s = 0; s < topology.switches.size(); ++s) {
    const Switch& sw = topology.switches[s];
    const Point c = at.switch_at[s];
    for (size_t m = 0; m < sw.ranks.size(); ++m) {
      const int r = sw.ranks[m];
      const auto [egress, ingress] = ports[s][m];
      if (r < 0 || r >= topology.num_ranks || egress < 0) continue;
      const double u = std::max(sim.links[egress].utilization, sim.links[ingress].utilization);
      edges += fmt::format(
          "<line class=\"port\" data-switch=\"{}\" data-rank=\"{}\" x1=\"{:.1f}\" y1=\"{:.1f}\" "
          "x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"{:.2f}\"><title>{}: rank {} "
          "port, egress utilization {}, ingress {}</title></line>",
          s, r, at.rank[r].x, at.rank[r].y, c.x, c.y, utilization_colour(u), width_of(u),
          escape(sw.name), r, percent(sim.links[egress].utilization),
          percent(sim.links[ingress].utilization));
    }
    boxes += fmt::format(
        "<g class=\"switch\"><rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"56\" height=\"22\" "
        "rx=\"4\"/><text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text><title>switch "
        "{}: {} ranks, {} µs alpha, {} µs/MB per port</title></g>",
        c.x - 28, c.y - 11, c.x, c.y + 4, escape(sw.name.substr(0, 8)), escape(sw.name),
        sw.ranks.size(), number(sw.alpha_us), number(sw.port_beta_us_per_mb));
  }
  return edges + boxes;
}

std::string utilization_key(double x, double y) {
  std::string out =
      fmt::format("<g class=\"key\"><text x=\"{}\" y=\"{}\">utilization</text>", x, y - 6);
  for (int i = 0; i < 10; ++i) {
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"16\" height=\"10\" fill=\"{}\"/>",
                       x + 16 * i, y, utilization_colour((i + 0.5) / 10));
  }
  return out + fmt::format(
                   "<text x=\"{}\" y=\"{}\">0%</text><text x=\"{}\" y=\"{}\" "
                   "text-anchor=\"end\">100%</text></g>",
                   x, y + 24, x + 160, y + 24);
}

std::string topology_svg(const Topology& topology, const sim::SimResult& sim,
                         const std::string& caption) {
  const Layout at = layout(topology);
  const double height = at.height + 50;
  const double width = std::max(at.width, 220.0);
  std::string out = fmt::format(
      "<figure><svg id=\"topology\" viewBox=\"0 0 {:.0f} {:.0f}\" style=\"max-width:{:.0f}px\" "
      "role=\"img\" aria-label=\"{}\"><title>{}</title>",
      width, height, std::max(width, 480.0), escape(caption), escape(caption));
  const std::vector<std::vector<int>> nodes = nodes_of(topology);
  for (size_t n = 0; n < at.node_box.size(); ++n) {
    const auto& [a, b] = at.node_box[n];
    out += fmt::format(
        "<g class=\"node\"><rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
        "rx=\"8\"/><text x=\"{:.1f}\" y=\"{:.1f}\">node {}</text><title>node {}: {} "
        "ranks</title></g>",
        a.x, a.y, b.x - a.x, b.y - a.y, a.x + 6, a.y + 14, n, n, nodes[n].size());
  }
  out += switch_marks(topology, at, sim);
  out += link_edges(topology, at, sim);
  for (int r = 0; r < topology.num_ranks; ++r) {
    out += fmt::format(
        "<g class=\"rank\"><circle cx=\"{0:.1f}\" cy=\"{1:.1f}\" r=\"11\"/><text x=\"{0:.1f}\" "
        "y=\"{2:.1f}\" text-anchor=\"middle\">{3}</text><title>rank {3} (node {4})</title></g>",
        at.rank[r].x, at.rank[r].y, at.rank[r].y + 4, r, topology.node_of(r));
  }
  out += utilization_key(20, at.height + 16);
  return out + "</svg><figcaption>" + escape(caption) + "</figcaption></figure>";
}

// ---------------------------------------------------------------------------------------------
// Timeline

constexpr double kLabelWidth = 170, kPlotWidth = 860, kRow = 12, kAxisHeight = 34;

struct TimelineRow {
  std::string label;
  std::string marks;
};

std::string time_axis(double end_us, double top, double bottom) {
  const Scale st{0, end_us, kLabelWidth, kLabelWidth + kPlotWidth, false};
  std::string out = "<g class=\"axes\">";
  for (const double t : ticks(0, end_us, false)) {
    out += fmt::format(
        "<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/><text "
        "x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>",
        st(t), top, bottom, top - 6, tick_label(t));
  }
  return out + fmt::format("<text class=\"label\" x=\"{}\" y=\"{}\">time (µs)</text></g>",
                           kLabelWidth + kPlotWidth + 6, top - 6);
}

std::string interval_rect(const char* css_class, double start, double end, double y,
                          const Scale& st, const std::string& fill, const std::string& tip) {
  const double x = st(start);
  return fmt::format(
      "<rect class=\"{}\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{}\" "
      "fill=\"{}\"><title>{}</title></rect>",
      css_class, x, y + 1, std::max(0.5, st(end) - x), kRow - 2, fill, escape(tip));
}

// One row per link and concurrent transfer with traffic, then one per threadblock.
std::vector<TimelineRow> timeline_rows(const sim::SimResult& sim, const Program& program,
                                       const Scale& st, int64_t limit) {
  const std::vector<sim::LinkInterval>& links = sim.timeline.links;
  const std::vector<int> sub = link_rows(links);
  std::vector<std::vector<int>> row_of(sim.links.size());  // [link][sub-row] -> row index
  std::vector<TimelineRow> rows;
  std::vector<size_t> order(links.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(links[a].link, sub[a]) < std::tie(links[b].link, sub[b]);
  });
  for (size_t i : order) {
    const sim::LinkInterval& l = links[i];
    std::vector<int>& rows_of_link = row_of[l.link];
    while (static_cast<int>(rows_of_link.size()) <= sub[i]) {
      rows_of_link.push_back(static_cast<int>(rows.size()));
      const std::string name = link_name(sim.links[l.link]);
      rows.push_back({sub[i] == 0 ? name : fmt::format("{} #{}", name, sub[i] + 1), ""});
    }
  }
  for (size_t i = 0; i < links.size() && static_cast<int64_t>(i) < limit; ++i) {
    const sim::LinkInterval& l = links[i];
    const int row = row_of[l.link][sub[i]];
    rows[row].marks +=
        interval_rect("busy", l.start_us, l.end_us, row * kRow, st,
                      utilization_colour(sim.links[l.link].utilization),
                      fmt::format("{}: rank {} tb {}, {}-{} µs", rows[row].label, l.rank,
                                  l.threadblock, number(l.start_us), number(l.end_us)));
  }
  std::vector<std::vector<int>> tb_row(program.gpus.size());
  for (const GpuProgram& gpu : program.gpus) {
    for (size_t t = 0; t < gpu.threadblocks.size(); ++t) {
      tb_row[gpu.rank].push_back(static_cast<int>(rows.size()));
      rows.push_back({fmt::format("rank {} tb {}", gpu.rank, t), ""});
    }
  }
  const std::vector<sim::StepInterval>& steps = sim.timeline.steps;
  for (size_t i = 0; i < steps.size() && static_cast<int64_t>(i) < limit; ++i) {
    const sim::StepInterval& s = steps[i];
    const int row = tb_row[s.rank][s.threadblock];
    rows[row].marks += interval_rect(
        "step", s.start_us, s.end_us, row * kRow, st, step_colour(s.type),
        fmt::format("rank {} tb {} step {} ({}) slice {}: {}-{} µs", s.rank, s.threadblock, s.step,
                    to_string(s.type), s.slice, number(s.start_us), number(s.end_us)));
  }
  return rows;
}

std::string step_key() {
  const std::array<std::pair<StepType, const char*>, 5> kinds = {
      {{StepType::kSend, "send"},
       {StepType::kRecv, "receive"},
       {StepType::kRecvCopySend, "receive-copy-send"},
       {StepType::kReduce, "reduce (any fused kind)"},
       {StepType::kCopy, "copy"}}};
  std::string out = "<ul class=\"legend\">";
  for (const auto& [type, label] : kinds) {
    out += fmt::format(
        "<li><svg width=\"14\" height=\"10\" aria-hidden=\"true\"><rect width=\"14\" "
        "height=\"10\" fill=\"{}\"/></svg>{}</li>",
        step_colour(type), label);
  }
  return out + "<li>link rows are coloured by the link's utilization</li></ul>";
}

std::string timeline_svg(const sim::SimResult& sim, const Program& program, int64_t limit,
                         const std::string& caption) {
  const double end_us = std::max(1e-9, sim.time_us);
  const Scale st{0, end_us, kLabelWidth, kLabelWidth + kPlotWidth, false};
  const std::vector<TimelineRow> rows = timeline_rows(sim, program, st, limit);
  const double height = rows.size() * kRow;
  std::string out = fmt::format(
      "<figure><svg id=\"timeline\" viewBox=\"0 {} {} {}\" role=\"img\" aria-label=\"{}\">"
      "<title>{}</title>",
      -kAxisHeight, kLabelWidth + kPlotWidth + 70, height + kAxisHeight + 4, escape(caption),
      escape(caption));
  out += time_axis(end_us, 0, height);
  for (size_t i = 0; i < rows.size(); ++i) {
    out += fmt::format(
        "<g class=\"row\"><text class=\"rowlabel\" x=\"{}\" y=\"{:.1f}\" "
        "text-anchor=\"end\">{}</text>{}</g>",
        kLabelWidth - 6, i * kRow + kRow - 2, escape(rows[i].label), rows[i].marks);
  }
  std::string note;
  const auto drawn = [&](size_t n) { return std::min<int64_t>(static_cast<int64_t>(n), limit); };
  if (sim.timeline.truncated || drawn(sim.timeline.steps.size()) < sim.timeline.steps.size() ||
      drawn(sim.timeline.links.size()) < sim.timeline.links.size()) {
    note = fmt::format("<p class=\"note\">Only the first {} step and link intervals are drawn.</p>",
                       limit);
  }
  return out + "</svg><figcaption>" + escape(caption) + "</figcaption>" + step_key() + note +
         "</figure>";
}

// ---------------------------------------------------------------------------------------------
// The page

constexpr std::string_view kStyle = R"css(
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto;
  max-width: 1100px; padding: 16px 24px 48px; color: #1a1a1a; background: #fff; }
h1 { font-size: 22px; margin: 8px 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px;
  border-bottom: 1px solid #ddd; padding-bottom: 4px; }
p.meta { color: #444; margin: 0 0 12px; }
figure { margin: 8px 0 16px; } figcaption { font-size: 13px; color: #333; margin-top: 4px; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; } .charts figure { flex: 1 1 480px; }
svg { width: 100%; height: auto; font-size: 11px; }
svg text { fill: #222; } svg .label { font-size: 12px; }
.axes line { stroke: #333; stroke-width: 1; } .axes line.grid { stroke: #e3e3e3; }
polyline { stroke-width: 2.5; } polyline.bound { stroke-width: 2; }
.legend { list-style: none; padding: 0; margin: 4px 0; display: flex; flex-wrap: wrap;
  gap: 4px 16px; font-size: 13px; } .legend svg { width: auto; vertical-align: middle;
  margin-right: 4px; }
.node rect { fill: #f5f7fa; stroke: #9aa5b1; } .switch rect { fill: #fff; stroke: #333; }
.rank circle { fill: #fff; stroke: #222; stroke-width: 1.5; } .rank text { font-weight: 600; }
line.link, line.port { stroke-linecap: round; opacity: 0.9; }
.rowlabel { font-size: 10px; } #timeline rect { stroke: none; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }
caption { text-align: left; font-weight: 600; padding-bottom: 4px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; vertical-align: top; }
thead th { background: #f3f3f3; } tbody th { text-align: left; }
td.best { font-weight: 700; } .ok { color: #006400; font-weight: 600; }
.bad { color: #b00020; font-weight: 600; } .na { color: #666; }
details pre { text-align: left; max-height: 240px; overflow: auto; font-size: 12px; }
.note { color: #7a4b00; }
.scroll { overflow-x: auto; }
)css";

// The fastest verified candidate at `bytes` (an index into v).
size_t fastest_at(const Verified& v, size_t size_index) {
  size_t best = 0;
  for (size_t k = 1; k < v.evaluated.size(); ++k) {
    if (v.evaluated[k]->results[size_index].time_us <
        v.evaluated[best]->results[size_index].time_us) {
      best = k;
    }
  }
  return best;
}

size_t detail_index(const std::vector<int64_t>& sizes, int64_t detail_bytes) {
  if (detail_bytes == 0) return sizes.size() - 1;
  const auto it = std::find(sizes.begin(), sizes.end(), detail_bytes);
  if (it == sizes.end()) {
    throw UserError(
        "", "detail size",
        fmt::format("{} is not one of the simulated sizes", format_bytes(detail_bytes)));
  }
  return static_cast<size_t>(it - sizes.begin());
}

}  // namespace

std::string html_report(const Topology& topology, const Collective& collective,
                        const std::vector<ReportCandidate>& candidates,
                        const ReportOptions& options) {
  const Verified v = verified_of(candidates);
  if (v.evaluated.empty())
    throw UserError("", "candidates", "no candidate verified; nothing to plot");
  const std::vector<int64_t> sizes = sizes_of(v);
  for (size_t k = 0; k < v.evaluated.size(); ++k) {
    if (v.evaluated[k]->results.size() != sizes.size()) {
      throw UserError("", "candidates", v.names[k] + " was simulated at other sizes");
    }
  }
  const size_t detail = detail_index(sizes, options.detail_bytes);
  const size_t shown = fastest_at(v, detail);
  sim::SimOptions sim_options;
  sim_options.record_timeline = true;
  sim_options.timeline_limit = options.timeline_limit;
  const sim::SimResult sim =
      sim::simulate(v.evaluated[shown]->program, topology, sizes[detail], sim_options);

  const std::string title = options.title.empty()
                                ? fmt::format("{} on {}", collective.name, topology.name)
                                : options.title;
  std::string page = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
      "content=\"width=device-width, initial-scale=1\"><title>{0}</title><style>{1}</style>"
      "</head><body><h1>{0}</h1><p class=\"meta\">{2} ({3} ranks, {4} nodes, {5} links, {6} "
      "switches); collective {7}; sizes {8} to {9} per rank; simulated by ccsynth's "
      "event-driven alpha-beta model (docs/simulator.md).</p>",
      escape(title), kStyle, escape(topology.name), topology.num_ranks, nodes_of(topology).size(),
      topology.links.size(), topology.switches.size(), escape(collective.name),
      format_bytes(sizes.front()), format_bytes(sizes.back()));
  page += "<h2>Time and bandwidth against size</h2><div class=\"charts\">";
  page += chart_svg(size_chart(collective, v, false));
  page += chart_svg(size_chart(collective, v, true));
  page += "</div><div class=\"scroll\">" + results_table_html(v) + "</div>";
  page += "<h2>Verification and synthesis</h2><div class=\"scroll\">" +
          candidates_table(candidates) + "</div>";
  const std::string at = fmt::format("{} at {} per rank ({} µs simulated)", v.names[shown],
                                     format_bytes(sizes[detail]), number(sim.time_us));
  page += "<h2>Link utilization</h2>";
  page += topology_svg(topology, sim,
                       "Links and switch ports coloured and widened by utilization: " + at +
                           ". Each direction of a link is drawn shifted to its right.");
  page += "<h2>Timeline</h2>";
  page += timeline_svg(
      sim, v.evaluated[shown]->program, options.timeline_limit,
      "When each link and threadblock is busy: " + at + " (launch overhead not shown)");
  return page + "</body></html>\n";
}

}  // namespace ccsynth::plan
