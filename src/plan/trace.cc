#include "ccsynth/plan/trace.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <tuple>

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

// Process 0 `process` with one track per entry of `names` (links, ports or connections) and a
// slice per interval, on extra rows where intervals of one track overlap.
void add_link_events(const std::vector<sim::LinkInterval>& intervals,
                     const std::vector<std::string>& names, const char* process,
                     nlohmann::json& events) {
  const std::vector<int> rows = link_rows(intervals);
  LinkThreads threads;
  threads.tids.resize(names.size());
  // Every link gets a track, busy or not, so the trace shows idle links too.
  for (size_t i = 0; i < names.size(); ++i) threads.tid(static_cast<int>(i), 0);
  for (size_t i = 0; i < intervals.size(); ++i) {
    const sim::LinkInterval& l = intervals[i];
    events.push_back(
        complete(fmt::format("rank {} tb {}", l.rank, l.threadblock), "link", kLinksPid,
                 threads.tid(l.link, rows[i]), l.start_us, l.end_us,
                 {{"link", l.link}, {"rank", l.rank}, {"threadblock", l.threadblock}}));
  }
  events.push_back(metadata("process_name", kLinksPid, -1, process));
  for (size_t link = 0; link < threads.tids.size(); ++link) {
    const std::string& base = names[link];
    const std::vector<int>& tids = threads.tids[link];
    for (size_t row = 0; row < tids.size(); ++row) {
      const std::string name = row == 0 ? base : fmt::format("{} #{}", base, row + 1);
      events.push_back(metadata("thread_name", kLinksPid, tids[row], name));
      events.push_back(sort_index(kLinksPid, tids[row], tids[row]));
    }
  }
}

void add_step_events(const std::vector<sim::StepInterval>& steps, const Program& program,
                     nlohmann::json& events) {
  for (const sim::StepInterval& s : steps) {
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

// A connection of a program: the sending and the receiving threadblock of one (src, dst,
// channel).
struct Connection {
  int src = 0, send_tb = 0, dst = 0, recv_tb = -1, channel = 0;
};

std::vector<Connection> connections_of(const Program& program) {
  std::vector<Connection> out;
  for (const GpuProgram& gpu : program.gpus) {
    for (size_t t = 0; t < gpu.threadblocks.size(); ++t) {
      const Threadblock& tb = gpu.threadblocks[t];
      if (tb.send_peer < 0 || tb.send_peer >= static_cast<int>(program.gpus.size())) continue;
      Connection c{gpu.rank, static_cast<int>(t), tb.send_peer, -1, tb.channel};
      const auto& peers = program.gpus[tb.send_peer].threadblocks;
      for (size_t r = 0; r < peers.size(); ++r) {
        if (peers[r].recv_peer == gpu.rank && peers[r].channel == tb.channel) {
          c.recv_tb = static_cast<int>(r);
        }
      }
      if (c.recv_tb >= 0) out.push_back(c);
    }
  }
  return out;
}

using StepsOf = std::vector<std::vector<std::vector<const runtime::ExecStep*>>>;  // [rank][tb]

// The step instances of every threadblock in the order it ran them.
StepsOf per_threadblock(const std::vector<runtime::ExecStep>& steps, const Program& program) {
  StepsOf out(program.gpus.size());
  for (const GpuProgram& gpu : program.gpus) out[gpu.rank].resize(gpu.threadblocks.size());
  for (const runtime::ExecStep& s : steps) out[s.rank][s.threadblock].push_back(&s);
  for (auto& rank : out) {
    for (auto& tb : rank) {
      std::sort(tb.begin(), tb.end(), [](const runtime::ExecStep* a, const runtime::ExecStep* b) {
        return std::tie(a->slice, a->step) < std::tie(b->slice, b->step);
      });
    }
  }
  return out;
}

StepType type_of(const Program& program, const runtime::ExecStep& s) {
  return program.gpus[s.rank].threadblocks[s.threadblock].steps[s.step].type;
}

// The k-th message of a connection is its sender's k-th sending step and its receiver's k-th
// receiving step (a connection is a FIFO): from the send's start to the receive's end.
std::vector<sim::LinkInterval> messages(const std::vector<runtime::ExecStep>& steps,
                                        const Program& program,
                                        const std::vector<Connection>& connections) {
  const StepsOf ordered = per_threadblock(steps, program);
  std::vector<sim::LinkInterval> out;
  for (size_t c = 0; c < connections.size(); ++c) {
    const Connection& conn = connections[c];
    std::vector<const runtime::ExecStep*> sent, received;
    for (const runtime::ExecStep* s : ordered[conn.src][conn.send_tb]) {
      if (sends(type_of(program, *s))) sent.push_back(s);
    }
    for (const runtime::ExecStep* s : ordered[conn.dst][conn.recv_tb]) {
      if (receives(type_of(program, *s))) received.push_back(s);
    }
    for (size_t k = 0; k < std::min(sent.size(), received.size()); ++k) {
      out.push_back({static_cast<int>(c), conn.src, conn.send_tb, sent[k]->start_us,
                     std::max(sent[k]->start_us, received[k]->end_us)});
    }
  }
  return out;
}

}  // namespace

nlohmann::json trace_json(const std::vector<runtime::ExecStep>& steps, const Program& program) {
  if (steps.empty()) {
    throw UserError(program.name, "timeline",
                    "the run recorded no steps (runtime::ExecOptions::record_timeline)");
  }
  std::vector<sim::StepInterval> intervals;
  intervals.reserve(steps.size());
  double end_us = 0;
  for (const runtime::ExecStep& s : steps) {
    intervals.push_back(
        {s.rank, s.threadblock, s.step, s.slice, type_of(program, s), s.start_us, s.end_us});
    end_us = std::max(end_us, s.end_us);
  }
  const std::vector<Connection> connections = connections_of(program);
  std::vector<std::string> names;
  for (const Connection& c : connections) {
    names.push_back(fmt::format("conn {}->{} ch {}", c.src, c.dst, c.channel));
  }
  nlohmann::json events = nlohmann::json::array();
  add_link_events(messages(steps, program, connections), names, "connections", events);
  add_step_events(intervals, program, events);
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ns"},
          {"otherData",
           {{"generator", "ccsynth"},
            {"program", program.name},
            {"runtime", "cpu"},
            {"steps", steps.size()},
            {"time_us", end_us}}}};
}

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
  std::vector<std::string> names;
  for (const sim::LinkUsage& u : result.links) names.push_back(link_name(u));
  add_link_events(result.timeline.links, names, "links", events);
  add_step_events(result.timeline.steps, program, events);
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
