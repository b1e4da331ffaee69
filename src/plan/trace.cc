#include "ccsynth/plan/trace.h"

#include <algorithm>
#include <numeric>
#include <string>

#include <fmt/format.h>

#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"

namespace ccsynth::plan {
namespace {

constexpr int kLinksPid = 0;

int rank_pid(int rank) { return rank + 1; }

nlohmann::json metadata(const char* what, int pid, int tid, const std::string& name) {
  nlohmann::json event = {{"ph", "M"}, {"name", what}, {"pid", pid}, {"args", {{"name", name}}}};
  if (tid >= 0) event["tid"] = tid;
  return event;
}

nlohmann::json sort_index(int pid, int tid, int index) {
  return {{"ph", "M"},
          {"name", "thread_sort_index"},
          {"pid", pid},
          {"tid", tid},
          {"args", {{"sort_index", index}}}};
}

nlohmann::json complete(const std::string& name, const char* category, int pid, int tid,
                        double start_us, double end_us, nlohmann::json args) {
  return {{"ph", "X"},
          {"name", name},
          {"cat", category},
          {"pid", pid},
          {"tid", tid},
          {"ts", start_us},
          {"dur", std::max(0.0, end_us - start_us)},
          {"args", std::move(args)}};
}

std::string threadblock_name(const Threadblock& tb, int index) {
  std::string name = fmt::format("tb {}", index);
  if (tb.send_peer >= 0) name += fmt::format(" send {}", tb.send_peer);
  if (tb.recv_peer >= 0) name += fmt::format(" recv {}", tb.recv_peer);
  return name + fmt::format(" ch {}", tb.channel);
}

// Thread ids of the links process: link i, row k -> the k-th thread allocated for link i.
struct LinkThreads {
  std::vector<std::vector<int>> tids;  // [link][row]
  int next = 0;
  int tid(int link, int row) {
    std::vector<int>& rows = tids[link];
    while (static_cast<int>(rows.size()) <= row) rows.push_back(next++);
    return rows[row];
  }
};

void add_link_events(const sim::SimResult& result, nlohmann::json& events) {
  const std::vector<sim::LinkInterval>& intervals = result.timeline.links;
  const std::vector<int> rows = link_rows(intervals);
  LinkThreads threads;
  threads.tids.resize(result.links.size());
  // Every link gets a track, busy or not, so the trace shows idle links too.
  for (size_t i = 0; i < result.links.size(); ++i) threads.tid(static_cast<int>(i), 0);
  for (size_t i = 0; i < intervals.size(); ++i) {
    const sim::LinkInterval& l = intervals[i];
    events.push_back(
        complete(fmt::format("rank {} tb {}", l.rank, l.threadblock), "link", kLinksPid,
                 threads.tid(l.link, rows[i]), l.start_us, l.end_us,
                 {{"link", l.link}, {"rank", l.rank}, {"threadblock", l.threadblock}}));
  }
  events.push_back(metadata("process_name", kLinksPid, -1, "links"));
  for (size_t link = 0; link < threads.tids.size(); ++link) {
    const std::string base = link_name(result.links[link]);
    const std::vector<int>& tids = threads.tids[link];
    for (size_t row = 0; row < tids.size(); ++row) {
      const std::string name = row == 0 ? base : fmt::format("{} #{}", base, row + 1);
      events.push_back(metadata("thread_name", kLinksPid, tids[row], name));
      events.push_back(sort_index(kLinksPid, tids[row], tids[row]));
    }
  }
}

void add_step_events(const sim::SimResult& result, const Program& program, nlohmann::json& events) {
  for (const sim::StepInterval& s : result.timeline.steps) {
    events.push_back(complete(fmt::format("{} step {}", to_string(s.type), s.step), "step",
                              rank_pid(s.rank), s.threadblock, s.start_us, s.end_us,
                              {{"rank", s.rank},
                               {"threadblock", s.threadblock},
                               {"step", s.step},
                               {"slice", s.slice},
                               {"type", to_string(s.type)}}));
  }
  for (const GpuProgram& gpu : program.gpus) {
    events.push_back(
        metadata("process_name", rank_pid(gpu.rank), -1, fmt::format("rank {}", gpu.rank)));
    events.push_back({{"ph", "M"},
                      {"name", "process_sort_index"},
                      {"pid", rank_pid(gpu.rank)},
                      {"args", {{"sort_index", rank_pid(gpu.rank)}}}});
    for (size_t t = 0; t < gpu.threadblocks.size(); ++t) {
      const int tid = static_cast<int>(t);
      events.push_back(metadata("thread_name", rank_pid(gpu.rank), tid,
                                threadblock_name(gpu.threadblocks[t], tid)));
      events.push_back(sort_index(rank_pid(gpu.rank), tid, tid));
    }
  }
}

}  // namespace

std::string link_name(const sim::LinkUsage& usage) {
  if (usage.dst < 0) return fmt::format("port {} egress", usage.src);
  if (usage.src < 0) return fmt::format("port {} ingress", usage.dst);
  return fmt::format("link {}->{}", usage.src, usage.dst);
}

std::vector<int> link_rows(const std::vector<sim::LinkInterval>& intervals) {
  std::vector<size_t> order(intervals.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return intervals[a].start_us < intervals[b].start_us;
  });
  std::vector<int> rows(intervals.size(), 0);
  std::vector<std::vector<double>> row_end;  // [link][row] -> end of its last interval
  for (size_t i : order) {
    const sim::LinkInterval& l = intervals[i];
    if (static_cast<int>(row_end.size()) <= l.link) row_end.resize(l.link + 1);
    std::vector<double>& ends = row_end[l.link];
    const auto free =
        std::find_if(ends.begin(), ends.end(), [&](double end) { return end <= l.start_us; });
    rows[i] = static_cast<int>(free - ends.begin());
    if (free == ends.end()) {
      ends.push_back(l.end_us);
    } else {
      *free = l.end_us;
    }
  }
  return rows;
}

nlohmann::json trace_json(const sim::SimResult& result, const Program& program,
                          const Topology& topology) {
  if (result.timeline.steps.empty() && result.events > 0) {
    throw UserError(program.name, "timeline",
                    "the simulation recorded no timeline (SimOptions::record_timeline)");
  }
  nlohmann::json events = nlohmann::json::array();
  add_link_events(result, events);
  add_step_events(result, program, events);
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ns"},
          {"otherData",
           {{"generator", "ccsynth"},
            {"program", program.name},
            {"topology", topology.name},
            {"bytes", result.bytes},
            {"size", format_bytes(result.bytes)},
            {"time_us", result.time_us},
            {"launch_us", topology.launch_us},
            {"truncated", result.timeline.truncated}}}};
}

}  // namespace ccsynth::plan
