#include "ccsynth/core/program.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <tuple>

#include "ccsynth/core/error.h"

namespace ccsynth {

namespace {
struct StepTypeName {
  StepType type;
  const char* name;
};
constexpr StepTypeName kStepTypeNames[] = {
    {StepType::kSend, "s"},
    {StepType::kRecv, "r"},
    {StepType::kRecvCopySend, "rcs"},
    {StepType::kRecvReduceSend, "rrs"},
    {StepType::kRecvReduceCopy, "rrc"},
    {StepType::kRecvReduceCopySend, "rrcs"},
    {StepType::kCopy, "cpy"},
    {StepType::kReduce, "re"},
    {StepType::kNop, "nop"},
};
}  // namespace

char to_char(Buffer buffer) {
  switch (buffer) {
    case Buffer::kInput: return 'i';
    case Buffer::kOutput: return 'o';
    case Buffer::kScratch: return 's';
  }
  return 'i';
}

std::string_view step_type_name(StepType type) {
  for (const auto& entry : kStepTypeNames) {
    if (entry.type == type) return entry.name;
  }
  return "nop";
}

std::string to_string(StepType type) { return std::string(step_type_name(type)); }

std::string to_string(Protocol protocol) {
  switch (protocol) {
    case Protocol::kSimple: return "Simple";
    case Protocol::kLL: return "LL";
    case Protocol::kLL128: return "LL128";
  }
  return "Simple";
}

std::optional<Buffer> parse_buffer(const std::string& text) {
  if (text == "i") return Buffer::kInput;
  if (text == "o") return Buffer::kOutput;
  if (text == "s") return Buffer::kScratch;
  return std::nullopt;
}

std::optional<StepType> parse_step_type(const std::string& text) {
  for (const auto& entry : kStepTypeNames) {
    if (text == entry.name) return entry.type;
  }
  return std::nullopt;
}

std::optional<Protocol> parse_protocol(const std::string& text) {
  if (text == "Simple") return Protocol::kSimple;
  if (text == "LL") return Protocol::kLL;
  if (text == "LL128") return Protocol::kLL128;
  return std::nullopt;
}

bool receives(StepType t) {
  return t == StepType::kRecv || t == StepType::kRecvCopySend || t == StepType::kRecvReduceSend ||
         t == StepType::kRecvReduceCopy || t == StepType::kRecvReduceCopySend;
}

bool sends(StepType t) {
  return t == StepType::kSend || t == StepType::kRecvCopySend || t == StepType::kRecvReduceSend ||
         t == StepType::kRecvReduceCopySend;
}

bool reduces(StepType t) {
  return t == StepType::kRecvReduceSend || t == StepType::kRecvReduceCopy ||
         t == StepType::kRecvReduceCopySend || t == StepType::kReduce;
}

bool reads_src(StepType t) {
  return t == StepType::kSend || t == StepType::kRecvReduceSend || t == StepType::kRecvReduceCopy ||
         t == StepType::kRecvReduceCopySend || t == StepType::kCopy || t == StepType::kReduce;
}

bool writes_dst(StepType t) {
  return t == StepType::kRecv || t == StepType::kRecvCopySend || t == StepType::kRecvReduceCopy ||
         t == StepType::kRecvReduceCopySend || t == StepType::kCopy || t == StepType::kReduce;
}

int GpuProgram::buffer_chunks(Buffer buffer) const {
  switch (buffer) {
    case Buffer::kInput: return input_chunks;
    case Buffer::kOutput: return output_chunks;
    case Buffer::kScratch: return scratch_chunks;
  }
  return 0;
}

int Program::total_threadblocks() const {
  int total = 0;
  for (const GpuProgram& gpu : gpus) total += static_cast<int>(gpu.threadblocks.size());
  return total;
}

int64_t Program::total_steps() const {
  int64_t total = 0;
  for (const GpuProgram& gpu : gpus) {
    for (const Threadblock& tb : gpu.threadblocks) total += static_cast<int64_t>(tb.steps.size());
  }
  return total;
}

BufferRef input_location(const Collective& c, Slot slot, bool inplace) {
  if (!inplace) return {Buffer::kInput, slot.index};
  if (c.output_chunks > c.input_chunks) {
    return {Buffer::kOutput, slot.rank * c.input_chunks + slot.index};
  }
  return {Buffer::kInput, slot.index};
}

BufferRef output_location(const Collective& c, Slot slot, bool inplace) {
  if (!inplace) return {Buffer::kOutput, slot.index};
  if (c.input_chunks > c.output_chunks) {
    return {Buffer::kInput, slot.rank * c.output_chunks + slot.index};
  }
  if (c.output_chunks > c.input_chunks) return {Buffer::kOutput, slot.index};
  return {Buffer::kInput, slot.index};
}

std::ostream& operator<<(std::ostream& os, const Step& s) {
  os << to_string(s.type) << " " << to_char(s.src_buffer) << "[" << s.src_offset << "] -> "
     << to_char(s.dst_buffer) << "[" << s.dst_offset << "] cnt=" << s.count;
  if (s.dep_tb >= 0) os << " dep=tb" << s.dep_tb << ":" << s.dep_step;
  if (s.has_dep) os << " hasdep";
  return os;
}

std::ostream& operator<<(std::ostream& os, const Program& p) {
  os << "Program " << p.name << ": " << to_string(p.collective) << " on " << p.num_ranks
     << " ranks, proto " << to_string(p.protocol) << ", " << p.num_channels << " channels, "
     << p.chunks_per_loop << " chunks per loop" << (p.inplace ? ", in-place" : "") << "\n";
  for (const GpuProgram& g : p.gpus) {
    os << "  gpu " << g.rank << " i=" << g.input_chunks << " o=" << g.output_chunks
       << " s=" << g.scratch_chunks << "\n";
    for (const Threadblock& tb : g.threadblocks) {
      os << "    tb " << tb.id << " send=" << tb.send_peer << " recv=" << tb.recv_peer
         << " chan=" << tb.channel << "\n";
      for (size_t i = 0; i < tb.steps.size(); ++i)
        os << "      " << i << ": " << tb.steps[i] << "\n";
    }
  }
  return os;
}

namespace {

Collective manual_allreduce(int num_ranks, int chunks) {
  Collective c;
  c.kind = CollectiveKind::kAllReduce;
  c.name = to_string(c.kind);
  c.num_ranks = num_ranks;
  c.chunks_per_rank = chunks;
  c.combining = true;
  c.input_chunks = c.output_chunks = chunks;
  for (int j = 0; j < chunks; ++j) {
    ChunkSpec spec;
    for (int r = 0; r < num_ranks; ++r) {
      spec.pre.push_back({r, j});
      spec.post.push_back({r, j});
    }
    c.chunks.push_back(spec);
  }
  return c;
}

}  // namespace

Collective collective_of(const Program& p) {
  const int R = p.num_ranks;
  int in = 0, out = 0;
  for (const GpuProgram& g : p.gpus) {
    in = std::max(in, g.input_chunks);
    out = std::max(out, g.output_chunks);
  }
  auto fail = [&](const std::string& reason) -> Collective { throw UserError("", "coll", reason); };
  if (R < 1) return fail("the program has no ranks");
  // `per_rank` chunks on one side, `all` = R * per_rank on the other (allgather, gather: in ->
  // out; reducescatter, scatter: out -> in); in-place programs may leave the small side empty.
  auto split = [&](int per_rank, int all) -> int {
    if (per_rank > 0) return per_rank;
    if (all > 0 && all % R == 0) return all / R;
    return fail("buffer sizes (i_chunks " + std::to_string(in) + ", o_chunks " +
                std::to_string(out) + ") fit no " + to_string(p.collective) + " on " +
                std::to_string(R) + " ranks")
        .chunks_per_rank;
  };
  const int root = std::clamp(p.root, 0, R - 1);
  switch (p.collective) {
    case CollectiveKind::kAllGather:
    case CollectiveKind::kGather: return make_collective(p.collective, R, split(in, out), root);
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kScatter: return make_collective(p.collective, R, split(out, in), root);
    case CollectiveKind::kAllReduce: {
      const int n = std::max(in, out);
      if (n < 1) return fail("allreduce with empty buffers");
      return n % R == 0 ? make_collective(p.collective, R, n / R) : manual_allreduce(R, n);
    }
    case CollectiveKind::kAllToAll:
      return make_collective(p.collective, R, split(0, std::max(in, out)));
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce: {
      const int n = std::max(in, out);
      if (n < 1) return fail(to_string(p.collective) + " with empty buffers");
      return make_collective(p.collective, R, n, root);
    }
    case CollectiveKind::kCustom: break;
  }
  return fail(
      "a custom program does not say which collective it implements; pass it "
      "explicitly (--collective NAME|FILE)");
}

namespace {

std::string tb_field(int rank, int tb) {
  return "gpu[" + std::to_string(rank) + "]/tb[" + std::to_string(tb) + "]";
}

std::string step_field(int rank, int tb, int step) {
  return tb_field(rank, tb) + "/step[" + std::to_string(step) + "]";
}

// Throws unless chunks [offset, offset + count) lie inside `buffer` of `gpu` (the check of step
// `step` of threadblock `tb`).
void check_chunk_range(const GpuProgram& gpu, Buffer buffer, int offset, int count,
                       const std::string& file, int rank, int tb, int step, const char* which) {
  const int64_t size = gpu.buffer_chunks(buffer);
  const int64_t end = int64_t{offset} + count;
  if (offset < 0 || end > size) {
    throw UserError(file, step_field(rank, tb, step),
                    std::string(which) + " chunks [" + std::to_string(offset) + ", " +
                        std::to_string(end) + ") of buffer '" + to_char(buffer) +
                        "' are outside its " + std::to_string(size) + " chunks");
  }
}

// The field names and messages are built only when a check fails: this runs over every step of
// every program simulated, verified or run (millions at a thousand ranks).
void check_steps(const GpuProgram& gpu, int t, const std::string& file) {
  const Threadblock& tb = gpu.threadblocks[t];
  for (int s = 0; s < static_cast<int>(tb.steps.size()); ++s) {
    const Step& step = tb.steps[s];
    auto fail = [&](const std::string& reason) {
      throw UserError(file, step_field(gpu.rank, t, s), reason);
    };
    auto type = [&] { return "step '" + to_string(step.type) + "'"; };
    if (step.type != StepType::kNop && step.count < 1) {
      fail("cnt must be at least 1, got " + std::to_string(step.count));
    }
    if (sends(step.type) && tb.send_peer < 0) {
      fail(type() + " sends but the threadblock has no send peer");
    }
    if (receives(step.type) && tb.recv_peer < 0) {
      fail(type() + " receives but the threadblock has no receive peer");
    }
    if (reads_src(step.type)) {
      check_chunk_range(gpu, step.src_buffer, step.src_offset, step.count, file, gpu.rank, t, s,
                        "source");
    }
    if (writes_dst(step.type)) {
      check_chunk_range(gpu, step.dst_buffer, step.dst_offset, step.count, file, gpu.rank, t, s,
                        "destination");
    }
    if (step.dep_tb == -1 && step.dep_step == -1) continue;
    const int n = static_cast<int>(gpu.threadblocks.size());
    if (step.dep_tb < 0 || step.dep_tb >= n) {
      fail("depid " + std::to_string(step.dep_tb) + " is not a threadblock of rank " +
           std::to_string(gpu.rank));
    }
    const int m = static_cast<int>(gpu.threadblocks[step.dep_tb].steps.size());
    if (step.dep_step < 0 || step.dep_step >= m) {
      fail("deps " + std::to_string(step.dep_step) + " is not a step of tb " +
           std::to_string(step.dep_tb) + " (" + std::to_string(m) + " steps)");
    }
  }
}

// One end of a connection at a rank: the peer, the channel and the threadblock (index in the
// rank). A rank's send ends name the receivers, its receive ends the senders.
struct End {
  int peer = 0;
  int channel = 0;
  int tb = 0;

  bool same_connection(const End& other) const {
    return peer == other.peer && channel == other.channel;
  }
  bool operator<(const End& other) const {
    return std::tie(peer, channel, tb) < std::tie(other.peer, other.channel, other.tb);
  }
};

// Every rank's send and receive ends, each rank's sorted by (peer, channel, threadblock), in
// flat arrays (a hashed table of the half a million threadblocks of TACOS's 512-rank rfs
// allreduce was most of validate_structure, which every simulation and verification runs).
struct RankEnds {
  std::vector<End> sends;
  std::vector<End> receives;
  std::vector<int> send_offsets;     // per rank, into sends; one more at the end
  std::vector<int> receive_offsets;  // the same into receives

  explicit RankEnds(const Program& program) {
    const int ranks = program.num_ranks;
    sends.reserve(program.total_threadblocks());
    receives.reserve(program.total_threadblocks());
    for (int r = 0; r < ranks; ++r) {
      const auto send_begin = static_cast<ptrdiff_t>(sends.size());
      const auto receive_begin = static_cast<ptrdiff_t>(receives.size());
      const std::vector<Threadblock>& tbs = program.gpus[r].threadblocks;
      for (int t = 0; t < static_cast<int>(tbs.size()); ++t) {
        if (tbs[t].send_peer >= 0) sends.push_back({tbs[t].send_peer, tbs[t].channel, t});
        if (tbs[t].recv_peer >= 0) receives.push_back({tbs[t].recv_peer, tbs[t].channel, t});
      }
      sort_ends(sends, send_begin);
      sort_ends(receives, receive_begin);
      send_offsets.push_back(static_cast<int>(send_begin));
      receive_offsets.push_back(static_cast<int>(receive_begin));
    }
    send_offsets.push_back(static_cast<int>(sends.size()));
    receive_offsets.push_back(static_cast<int>(receives.size()));
  }

  std::span<const End> sends_of(int rank) const {
    return {sends.data() + send_offsets[rank],
            static_cast<size_t>(send_offsets[rank + 1] - send_offsets[rank])};
  }
  std::span<const End> receives_of(int rank) const {
    return {receives.data() + receive_offsets[rank],
            static_cast<size_t>(receive_offsets[rank + 1] - receive_offsets[rank])};
  }

 private:
  static void sort_ends(std::vector<End>& ends, ptrdiff_t from) {
    std::sort(ends.begin() + from, ends.end());
  }
};

// The threadblock of `ends` (one rank's, sorted) that is the second at its connection and comes
// first in threadblock order, with the first one at that connection; {-1, -1} when none is.
std::pair<int, int> first_duplicate(std::span<const End> ends) {
  std::pair<int, int> out{-1, -1};
  for (size_t i = 1; i < ends.size(); ++i) {
    const bool second = ends[i].same_connection(ends[i - 1]) &&
                        (i < 2 || !ends[i - 1].same_connection(ends[i - 2]));
    if (second && (out.first < 0 || ends[i].tb < out.first)) out = {ends[i].tb, ends[i - 1].tb};
  }
  return out;
}

// The end of `ends` (one rank's, sorted) at (peer, channel), or nullptr.
const End* find_end(std::span<const End> ends, int peer, int channel) {
  const auto it = std::lower_bound(ends.begin(), ends.end(), End{peer, channel, -1});
  return it != ends.end() && it->peer == peer && it->channel == channel ? &*it : nullptr;
}

// Throws the per-threadblock defects (ids, peers, channels, a second threadblock at a
// connection, steps) at the first one in (rank, threadblock) order.
void check_threadblocks(const Program& program, const RankEnds& ends, const std::string& file) {
  const int num_ranks = program.num_ranks;
  for (int r = 0; r < num_ranks; ++r) {
    const GpuProgram& gpu = program.gpus[r];
    if (gpu.rank != r) {
      throw UserError(file, "gpu[" + std::to_string(r) + "]", "id is " + std::to_string(gpu.rank));
    }
    if (gpu.input_chunks < 0 || gpu.output_chunks < 0 || gpu.scratch_chunks < 0) {
      throw UserError(file, "gpu[" + std::to_string(r) + "]", "negative buffer size");
    }
    const auto [second_sender, first_sender] = first_duplicate(ends.sends_of(r));
    const auto [second_receiver, first_receiver] = first_duplicate(ends.receives_of(r));
    for (int t = 0; t < static_cast<int>(gpu.threadblocks.size()); ++t) {
      const Threadblock& tb = gpu.threadblocks[t];
      auto fail = [&](const std::string& reason) { throw UserError(file, tb_field(r, t), reason); };
      if (tb.id != t) fail("threadblock ids must be 0, 1, ... in order");
      for (const int peer : {tb.send_peer, tb.recv_peer}) {
        if (peer < -1 || peer >= num_ranks || peer == r) {
          fail("peer " + std::to_string(peer) + " is not another rank of 0.." +
               std::to_string(num_ranks - 1));
        }
      }
      if (tb.channel < 0) fail("negative channel");
      auto on = [&] { return " on channel " + std::to_string(tb.channel); };
      if (t == second_sender) {
        fail("two threadblocks send to rank " + std::to_string(tb.send_peer) + on() + " (tb " +
             std::to_string(first_sender) + " too)");
      }
      if (t == second_receiver) {
        fail("two threadblocks receive from rank " + std::to_string(tb.recv_peer) + on() + " (tb " +
             std::to_string(first_receiver) + " too)");
      }
      check_steps(gpu, t, file);
    }
  }
}

// Pairs every send end with its receive end, in (sender, receiver, channel) order; an end
// without its partner is reported for the first such connection in that order.
std::vector<PairedConnection> pair_ends(const RankEnds& ends, int num_ranks,
                                        const std::string& file) {
  std::vector<PairedConnection> out;
  out.reserve(ends.sends.size());
  std::optional<PairedConnection> unmatched;  // the first connection with one end only
  auto note_unmatched = [&](const PairedConnection& c) {
    if (!unmatched || std::tie(c.sender, c.receiver, c.channel) <
                          std::tie(unmatched->sender, unmatched->receiver, unmatched->channel)) {
      unmatched = c;
    }
  };
  for (int r = 0; r < num_ranks; ++r) {
    for (const End& send : ends.sends_of(r)) {
      const End* receive = find_end(ends.receives_of(send.peer), r, send.channel);
      const PairedConnection c{r, send.peer, send.channel, send.tb, receive ? receive->tb : -1};
      if (receive == nullptr) {
        note_unmatched(c);
      } else {
        out.push_back(c);
      }
    }
  }
  // Each send found a distinct receive (one threadblock per end): a receive without its send
  // exists only when fewer were found than there are receives.
  const bool receive_unmatched = out.size() < ends.receives.size();
  for (int r = 0; receive_unmatched && r < num_ranks; ++r) {
    for (const End& receive : ends.receives_of(r)) {
      if (find_end(ends.sends_of(receive.peer), r, receive.channel) == nullptr) {
        note_unmatched({receive.peer, r, receive.channel, -1, receive.tb});
      }
    }
  }
  if (!unmatched) return out;
  const PairedConnection& c = *unmatched;
  const std::string on = " on channel " + std::to_string(c.channel);
  if (c.receiver_tb < 0) {
    throw UserError(file, tb_field(c.sender, c.sender_tb),
                    "sends to rank " + std::to_string(c.receiver) + on +
                        " but no threadblock of rank " + std::to_string(c.receiver) +
                        " receives from rank " + std::to_string(c.sender) + " on that channel");
  }
  throw UserError(file, tb_field(c.receiver, c.receiver_tb),
                  "receives from rank " + std::to_string(c.sender) + on +
                      " but no threadblock of rank " + std::to_string(c.sender) +
                      " sends to rank " + std::to_string(c.receiver) + " on that channel");
}

}  // namespace

std::vector<PairedConnection> validated_connections(const Program& program,
                                                    const std::string& file) {
  const int num_ranks = program.num_ranks;
  if (num_ranks <= 0 || static_cast<int>(program.gpus.size()) != num_ranks) {
    throw UserError(file, "ngpus",
                    "the program has " + std::to_string(program.gpus.size()) +
                        " gpu elements but ngpus = " + std::to_string(num_ranks));
  }
  const RankEnds ends(program);
  check_threadblocks(program, ends, file);
  return pair_ends(ends, num_ranks, file);
}

void validate_structure(const Program& program, const std::string& file) {
  validated_connections(program, file);
}

}  // namespace ccsynth
