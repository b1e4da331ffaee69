#pragma once
// A simulation's timeline (sim::Timeline) as Chrome trace-event JSON, which Perfetto
// (ui.perfetto.dev) and chrome://tracing open as they are (docs/formats.md "Trace JSON").
//
// Tracks: process 0 "links" holds one thread per link and switch port of SimResult::links, named
// "link S->D" / "port R egress" / "port R ingress"; a link with several lanes, or a port carrying
// several transfers at once, gets one thread per concurrent transfer ("link S->D #2"), because a
// track's slices must not overlap. Process R+1 "rank R" holds one thread per threadblock, named
// "tb T" with its peers and channel ("tb 0 send 1 recv 3 ch 0"). Every interval is a complete
// event ("ph": "X") with ts and dur in microseconds.
//
// A run on the CPU runtime (runtime::ExecStep, wall-clock) has the same rank processes; its
// process 0 "connections" holds one thread per connection, "conn S->D ch C", on which every
// message lasts from the start of its send to the end of its receive (more rows, "#2", while
// several are in flight).

#include <vector>

#include <nlohmann/json.hpp>

#include "ccsynth/core/program.h"
#include "ccsynth/core/topology.h"
#include "ccsynth/runtime/cpu_executor.h"
#include "ccsynth/sim/simulate.h"

namespace ccsynth::plan {

/// A display name for entry `usage` of SimResult::links: "link S->D", "port R egress" or
/// "port R ingress".
std::string link_name(const sim::LinkUsage& usage);

/// Per interval, the index of the concurrent-transfer row it is drawn on within its link
/// (0-based, first fit in start order), so rows never hold overlapping intervals.
std::vector<int> link_rows(const std::vector<sim::LinkInterval>& intervals);

/// The trace-event document {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}
/// of `result`'s timeline (simulated with SimOptions::record_timeline) of `program` on
/// `topology`. UserError when the result holds no timeline.
nlohmann::json trace_json(const sim::SimResult& result, const Program& program,
                          const Topology& topology);

/// The trace-event document of one run of `program` on the CPU runtime (ExecResult::timeline,
/// recorded with ExecOptions::record_timeline). UserError when `steps` is empty.
nlohmann::json trace_json(const std::vector<runtime::ExecStep>& steps, const Program& program);

}  // namespace ccsynth::plan
