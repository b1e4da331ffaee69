#include "program_checks.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "ccsynth/core/error.h"
#include "ccsynth/verify/verify_program.h"

namespace ccsynth::verify {

namespace detail {

void ViolationSink::add(ViolationKind kind, int rank, int threadblock, int step,
                        const std::string& message) {
  if (counts_[index(kind)]++ < kMaxPerKind) {
    report_.violations.push_back({kind, rank, threadblock, step, prefix_ + message});
  }
}

VerifyReport ViolationSink::finish() const {
  VerifyReport out = report_;
  for (size_t k = 0; k < counts_.size(); ++k) {
    if (counts_[k] <= kMaxPerKind) continue;
    const auto kind = static_cast<ViolationKind>(k);
    out.violations.push_back({kind, -1, -1, -1,
                              std::to_string(counts_[k] - kMaxPerKind) + " more " +
                                  to_string(kind) + " violations not listed"});
  }
  return out;
}

// Strings are built by appending: GCC 12 -O3 reports a false -Wrestrict for
// `"literal" + std::string` temporaries.
std::string quoted(StepType type) {
  std::string out = "`";
  out += to_string(type);
  out += '`';
  return out;
}

std::string buffer_range(Buffer b, int offset, int count) {
  std::string out(1, to_char(b));
  out += '[';
  out += std::to_string(offset);
  if (count > 1) {
    out += "..";
    out += std::to_string(int64_t{offset} + count - 1);  // no int overflow on hostile offsets
  }
  out += ']';
  return out;
}

namespace {

// Offsets of the operands a step uses must lie inside the rank's buffers.
bool check_bounds(const GpuProgram& g, int t, int k, const Step& s, ViolationSink& sink) {
  bool ok = true;
  auto check = [&](Buffer b, int offset, const char* role) {
    const int size = g.buffer_chunks(b);
    if (offset >= 0 && static_cast<int64_t>(offset) + s.count <= size) return;
    ok = false;
    sink.add(ViolationKind::kBounds, g.rank, t, k,
             std::string(role) + " " + buffer_range(b, offset, s.count) + " of " + quoted(s.type) +
                 " is outside the " + std::to_string(size) + "-chunk buffer '" + to_char(b) + "'");
  };
  if (s.type == StepType::kNop || s.count < 1) return true;
  if (reads_src(s.type)) check(s.src_buffer, s.src_offset, "source");
  if (writes_dst(s.type)) check(s.dst_buffer, s.dst_offset, "destination");
  return ok;
}

// Step-level checks of one threadblock; returns false on a fatal defect.
bool check_steps(const GpuProgram& g, int t, ViolationSink& sink) {
  const Threadblock& tb = g.threadblocks[t];
  const int num_tbs = static_cast<int>(g.threadblocks.size());
  bool ok = true;
  for (int k = 0; k < static_cast<int>(tb.steps.size()); ++k) {
    const Step& s = tb.steps[k];
    auto fail = [&](bool fatal, const std::string& message) {
      sink.add(ViolationKind::kStructure, g.rank, t, k, message);
      if (fatal) ok = false;
    };
    if (sends(s.type) && tb.send_peer < 0)
      fail(true, quoted(s.type) + " on a threadblock without a send peer");
    if (receives(s.type) && tb.recv_peer < 0)
      fail(true, quoted(s.type) + " on a threadblock without a receive peer");
    if (s.type == StepType::kNop && s.count != 0)
      fail(false, std::string("nop with cnt=") + std::to_string(s.count) + " (must be 0)");
    if (s.type != StepType::kNop && s.count < 1)
      fail(true, "cnt=" + std::to_string(s.count) + " (must be >= 1)");
    if ((s.dep_tb < 0) != (s.dep_step < 0)) {
      fail(true, "depid=" + std::to_string(s.dep_tb) + " deps=" + std::to_string(s.dep_step) +
                     ": both or neither must be -1");
    } else if (s.dep_tb >= num_tbs) {
      fail(true, "depends on threadblock " + std::to_string(s.dep_tb) + ", but the rank has " +
                     std::to_string(num_tbs));
    } else if (s.dep_tb >= 0 &&
               s.dep_step >= static_cast<int>(g.threadblocks[s.dep_tb].steps.size())) {
      fail(true, "depends on step " + std::to_string(s.dep_step) + " of threadblock " +
                     std::to_string(s.dep_tb) + ", which has " +
                     std::to_string(g.threadblocks[s.dep_tb].steps.size()) + " steps");
    } else if (s.dep_tb == t && s.dep_step >= k) {
      fail(false, "depends on its own threadblock's step " + std::to_string(s.dep_step) +
                      ", which runs after it");
    }
    if (!check_bounds(g, t, k, s, sink)) ok = false;
  }
  return ok;
}

// Threadblock-level checks of one rank; returns false on a fatal defect.
bool check_threadblocks(const Program& p, const GpuProgram& g, ViolationSink& sink) {
  bool ok = true;
  // (peer, channel, direction) -> first threadblock using it.
  std::map<std::tuple<int, int, int>, int> connections;
  for (int t = 0; t < static_cast<int>(g.threadblocks.size()); ++t) {
    const Threadblock& tb = g.threadblocks[t];
    auto fail = [&](bool fatal, const std::string& message) {
      sink.add(ViolationKind::kStructure, g.rank, t, -1, message);
      if (fatal) ok = false;
    };
    if (tb.id != t) {
      fail(true, "threadblock id " + std::to_string(tb.id) + " at position " + std::to_string(t) +
                     ": ids must be contiguous from 0");
    }
    if (tb.channel < 0 || tb.channel >= p.num_channels) {
      fail(false, "chan=" + std::to_string(tb.channel) + " is outside 0.." +
                      std::to_string(p.num_channels - 1) +
                      " (nchannels=" + std::to_string(p.num_channels) + ")");
    }
    const std::pair<int, const char*> peers[] = {{tb.send_peer, "send"}, {tb.recv_peer, "recv"}};
    for (int d = 0; d < 2; ++d) {
      const auto [peer, what] = peers[d];
      if (peer == -1) continue;
      if (peer < -1 || peer >= p.num_ranks) {
        fail(true, std::string(what) + "=" + std::to_string(peer) + " is not a rank");
      } else if (peer == g.rank) {
        fail(true, std::string(what) + "=" + std::to_string(peer) + " is the rank itself");
      } else {
        const auto [it, inserted] = connections.insert({{peer, tb.channel, d}, t});
        if (!inserted) {
          fail(true, std::string("threadblocks ") + std::to_string(it->second) + " and " +
                         std::to_string(t) + " both " + what + " " + (d == 0 ? "to" : "from") +
                         " rank " + std::to_string(peer) + " on channel " +
                         std::to_string(tb.channel) +
                         ": one connection has one FIFO and one threadblock per direction");
        }
      }
    }
    if (!check_steps(g, t, sink)) ok = false;
  }
  return ok;
}

}  // namespace

bool check_structure(const Program& p, const Collective& c, ViolationSink& sink,
                     std::vector<PairedConnection>& connections) {
  auto fail = [&](const std::string& message) {
    sink.add(ViolationKind::kStructure, -1, -1, -1, message);
  };
  if (p.num_ranks != c.num_ranks) {
    fail("the program has " + std::to_string(p.num_ranks) + " ranks, the collective " +
         std::to_string(c.num_ranks));
    return false;
  }
  if (static_cast<int>(p.gpus.size()) != p.num_ranks) {
    fail("ngpus=" + std::to_string(p.num_ranks) + " but " + std::to_string(p.gpus.size()) +
         " gpus are given");
    return false;
  }
  bool ok = true;
  int max_chunks = 0;
  for (int r = 0; r < p.num_ranks; ++r) {
    const GpuProgram& g = p.gpus[r];
    if (g.rank != r) {
      sink.add(ViolationKind::kStructure, r, -1, -1,
               "gpu at position " + std::to_string(r) + " has id " + std::to_string(g.rank));
      return false;
    }
    if (g.input_chunks < 0 || g.output_chunks < 0 || g.scratch_chunks < 0) {
      sink.add(ViolationKind::kStructure, r, -1, -1, "negative buffer size");
      ok = false;
      continue;
    }
    max_chunks = std::max({max_chunks, g.input_chunks, g.output_chunks});
    if (!check_threadblocks(p, g, sink)) ok = false;
  }
  if (p.chunks_per_loop != max_chunks) {
    fail("nchunksperloop=" + std::to_string(p.chunks_per_loop) +
         " but the largest input/output buffer has " + std::to_string(max_chunks) +
         " chunks: the runtime would size chunks wrongly");
  }
  if (!ok) return false;
  // The check `simulate` and `run` apply too, so that no verb accepts what another rejects
  // (e.g. a receive peer that nothing sends to); the checks above name more defects at once.
  try {
    connections = validated_connections(p, "");
  } catch (const UserError& e) {
    fail(e.field() + ": " + e.reason());
    return false;
  }
  return true;
}

}  // namespace detail

}  // namespace ccsynth::verify
