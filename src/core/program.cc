#include "ccsynth/core/program.h"

#include <algorithm>

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

std::string to_string(StepType type) {
  for (const auto& entry : kStepTypeNames) {
    if (entry.type == type) return entry.name;
  }
  return "nop";
}

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

}  // namespace ccsynth
