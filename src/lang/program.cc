#include "ccsynth/lang/program.h"

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "ccsynth/core/error.h"
#include "lang/state.h"

namespace ccsynth::lang {

namespace {

std::string text(int value) { return std::to_string(value); }

std::string range_text(int index, int count) {
  return count == 1 ? "[" + text(index) + "]"
                    : "[" + text(index) + ".." + text(index + count - 1) + "]";
}

std::string slot_text(int rank, const Buffer& buffer, int index, int count = 1) {
  return "rank " + text(rank) + " " + to_string(buffer) + range_text(index, count);
}

// Describes a value for messages: "chunk 5", "chunk 5 reduced over 3 of 8 contributions".
std::string value_text(const Collective& c, const Value& v) {
  if (!v.initialized()) return "nothing (uninitialized)";
  std::string out = "chunk " + text(v.chunk);
  if (c.combining) {
    out += " with " + text(static_cast<int>(v.parts.size())) + " of " +
           text(static_cast<int>(c.chunks[v.chunk].pre.size())) + " contributions";
  }
  return out;
}

}  // namespace

Buffer Buffer::parse(const std::string& name) {
  if (name == "input" || name == "in" || name == "i") return input();
  if (name == "output" || name == "out" || name == "o") return output();
  if (name.empty()) throw UserError("", "buffer", "empty buffer name");
  return scratch(name);
}

std::string to_string(const Buffer& buffer) { return buffer.name; }

std::string location_text(const std::source_location& where) {
  return std::filesystem::path(where.file_name()).filename().string() + ":" +
         text(static_cast<int>(where.line()));
}

std::string describe(const Operation& op) {
  std::string out =
      op_name(op.kind) + " " + slot_text(op.src_rank, op.src_buffer, op.src_index, op.count);
  out += (op.kind == OpKind::kCopy ? " -> " : " into ") +
         slot_text(op.dst_rank, op.dst_buffer, op.dst_index, op.count);
  if (op.directives.channel >= 0) out += " ch=" + text(op.directives.channel);
  if (op.directives.sendtb >= 0) out += " sendtb=" + text(op.directives.sendtb);
  if (op.directives.recvtb >= 0) out += " recvtb=" + text(op.directives.recvtb);
  if (op.parallel > 1) out += " parallelize=" + text(op.parallel);
  if (!op.where.empty()) out += " (" + op.where + ")";
  return out;
}

std::string ChunkRef::describe() const { return slot_text(rank_, buffer_, index_, count_); }

ChunkRef ChunkRef::copy(int rank, const Buffer& buffer, int index, const Directives& directives,
                        std::source_location where) const {
  return copy_at(location_text(where), rank, buffer, index, directives);
}

ChunkRef ChunkRef::reduce(const ChunkRef& other, const Directives& directives,
                          std::source_location where) const {
  return reduce_at(location_text(where), other, directives);
}

ChunkRef ChunkRef::copy_at(const std::string& where, int rank, const Buffer& buffer, int index,
                           const Directives& directives) const {
  return program_->record(OpKind::kCopy, *this, *this, rank, buffer, index, directives, where);
}

ChunkRef ChunkRef::reduce_at(const std::string& where, const ChunkRef& other,
                             const Directives& directives) const {
  if (other.program_ != program_) {
    throw UserError(where, "reduce", "the two references belong to different programs");
  }
  return program_->record(OpKind::kReduce, other, *this, rank_, buffer_, index_, directives, where);
}

// ---------------------------------------------------------------------------------------------
// DslProgram: construction and buffers

namespace {

// The key of an input or output location core's input_location / output_location placed.
LocationKey key_of(int rank, const BufferRef& ref) {
  return {rank, ref.buffer == ccsynth::Buffer::kOutput ? BufferKind::kOutput : BufferKind::kInput,
          "", ref.index};
}

void check_options(const ProgramOptions& o) {
  if (o.instances < 1 || o.instances > kMaxChannels) {
    throw UserError("", "instances",
                    "must be in 1.." + text(kMaxChannels) + ", got " + text(o.instances));
  }
}

}  // namespace

DslProgram::DslProgram(Collective collective, ProgramOptions options)
    : collective_(std::move(collective)),
      options_(std::move(options)),
      state_(std::make_unique<State>()) {
  validate(collective_);
  check_options(options_);
  for (int k = 0; k < collective_.num_chunks(); ++k) {
    const auto& pre = collective_.chunks[k].pre;
    for (int j = 0; j < static_cast<int>(pre.size()); ++j) {
      Location& loc = state_->locations[key_of(
          pre[j].rank, input_location(collective_, pre[j], options_.inplace))];
      loc.value = Value{k, collective_.combining ? std::vector<int>{j} : std::vector<int>{}};
    }
  }
}

DslProgram::~DslProgram() = default;

namespace {

// The location (rank, buffer, index) after in-place aliasing; UserError when out of range.
LocationKey location_key(const Collective& c, bool inplace, int rank, const Buffer& buffer,
                         int index, const std::string& where, const std::string& what) {
  if (rank < 0 || rank >= c.num_ranks) {
    throw UserError(where, what, "rank " + text(rank) + " outside 0.." + text(c.num_ranks - 1));
  }
  const int size = buffer.kind == BufferKind::kInput    ? c.input_chunks
                   : buffer.kind == BufferKind::kOutput ? c.output_chunks
                                                        : kMaxBufferIndex;
  if (index < 0 || index >= size) {
    throw UserError(where, what,
                    "index " + text(index) + " outside " + to_string(buffer) + "[0.." +
                        text(size - 1) + "] of rank " + text(rank));
  }
  if (buffer.kind == BufferKind::kScratch) return {rank, BufferKind::kScratch, buffer.name, index};
  return key_of(rank, buffer.kind == BufferKind::kInput
                          ? input_location(c, Slot{rank, index}, inplace)
                          : output_location(c, Slot{rank, index}, inplace));
}

void check_count(int count, const std::string& where, const std::string& what) {
  if (count < 1 || count > kMaxBufferIndex) {
    throw UserError(where, what,
                    "count must be in 1.." + text(kMaxBufferIndex) + ", got " + text(count));
  }
}

}  // namespace

ChunkRef DslProgram::chunk(int rank, const Buffer& buffer, int index, int count,
                           std::source_location where) {
  return chunk_at(location_text(where), rank, buffer, index, count);
}

ChunkRef DslProgram::chunk_at(const std::string& where, int rank, const Buffer& buffer, int index,
                              int count) {
  check_count(count, where, "chunk");
  const std::vector<LocationKey> keys = keys_of(rank, buffer, index, count, where, "chunk");
  for (int i = 0; i < count; ++i) {
    auto it = state_->locations.find(keys[i]);
    if (it == state_->locations.end() || !it->second.value.initialized()) {
      throw UserError(
          where, "chunk",
          slot_text(rank, buffer, index + i) + " is uninitialized (nothing was copied there yet)");
    }
  }
  return make_ref(rank, buffer, index, keys);
}

std::vector<LocationKey> DslProgram::keys_of(int rank, const Buffer& buffer, int index, int count,
                                             const std::string& where,
                                             const std::string& what) const {
  std::vector<LocationKey> keys;
  for (int i = 0; i < count; ++i) {
    keys.push_back(
        location_key(collective_, options_.inplace, rank, buffer, index + i, where, what));
  }
  return keys;
}

ChunkRef DslProgram::make_ref(int rank, const Buffer& buffer, int index,
                              const std::vector<LocationKey>& keys) {
  std::vector<uint64_t> versions;
  for (const LocationKey& key : keys) versions.push_back(state_->locations[key].version);
  return ChunkRef(this, rank, buffer, index, static_cast<int>(keys.size()), std::move(versions));
}

int DslProgram::parallel_factor() const {
  return std::accumulate(parallel_stack_.begin(), parallel_stack_.end(), 1, std::multiplies<>());
}

void DslProgram::begin_parallelize(int factor, const std::string& where) {
  if (factor < 1 || factor > kMaxChannels) {
    throw UserError(where, "parallelize",
                    "factor must be in 1.." + text(kMaxChannels) + ", got " + text(factor));
  }
  const int total = parallel_factor() * factor;
  if (total > kMaxChannels) {
    throw UserError(where, "parallelize",
                    "nested factors multiply to " + text(total) + ", more than the " +
                        text(kMaxChannels) + " channels a connection can have");
  }
  parallel_stack_.push_back(factor);
}

void DslProgram::end_parallelize() {
  if (parallel_stack_.empty()) {
    throw UserError("", "parallelize", "end without a matching begin");
  }
  parallel_stack_.pop_back();
}

DslProgram::ParallelScope DslProgram::parallelize(int factor, std::source_location where) {
  begin_parallelize(factor, location_text(where));
  return ParallelScope(this);
}

std::map<std::string, int> DslProgram::scratch_sizes() const { return state_->scratch_sizes; }

// ---------------------------------------------------------------------------------------------
// Recording an operation

namespace {

// UserError when `ref` is not the latest reference to each of its locations.
void check_fresh(const ChunkRef& ref, const std::vector<LocationKey>& keys,
                 const std::vector<uint64_t>& versions, const std::map<LocationKey, Location>& locs,
                 const std::vector<Operation>& ops, OpKind kind, const std::string& where) {
  for (int i = 0; i < ref.count(); ++i) {
    const Location& loc = locs.at(keys[i]);
    if (loc.version == versions[i]) continue;
    std::string by = loc.last_writer >= 0 ? "the " + op_name(ops[loc.last_writer].kind) + " at " +
                                                ops[loc.last_writer].where
                                          : "an earlier operation";
    throw UserError(where, op_name(kind),
                    "stale reference: " + slot_text(ref.rank(), ref.buffer(), ref.index() + i) +
                        " was overwritten by " + by +
                        " after this reference was made; use the reference that operation "
                        "returned (only the latest reference to a location may be used)");
  }
}

}  // namespace

ChunkRef DslProgram::record(OpKind kind, const ChunkRef& src, const ChunkRef& target, int dst_rank,
                            const Buffer& dst_buffer, int dst_index, const Directives& directives,
                            const std::string& where) {
  const std::string what = op_name(kind);
  const int count = src.count();
  if (kind == OpKind::kReduce && target.count() != count) {
    throw UserError(where, what, "counts differ: " + target.describe() + " and " + src.describe());
  }
  if (kind == OpKind::kReduce && !collective_.combining) {
    throw UserError(where, what,
                    "reduce in " + collective_.name +
                        ", which is not a combining collective (only copies move its chunks)");
  }
  const std::vector<LocationKey> src_keys =
      keys_of(src.rank(), src.buffer(), src.index(), count, where, what);
  check_fresh(src, src_keys, src.versions_, state_->locations, operations_, kind, where);
  const std::vector<LocationKey> dst_keys =
      keys_of(dst_rank, dst_buffer, dst_index, count, where, what);
  if (kind == OpKind::kReduce) {
    check_fresh(target, dst_keys, target.versions_, state_->locations, operations_, kind, where);
  }
  Operation op;
  op.kind = kind;
  op.src_rank = src.rank();
  op.src_buffer = src.buffer();
  op.src_index = src.index();
  op.dst_rank = dst_rank;
  op.dst_buffer = dst_buffer;
  op.dst_index = dst_index;
  op.count = count;
  op.directives = directives;
  op.parallel = parallel_factor();
  op.where = where;
  check_directives(op);

  for (int i = 0; i < count; ++i) {
    for (int j = 0; j < count; ++j) {
      if (kind == OpKind::kCopy && src_keys[i] == dst_keys[j]) {
        throw UserError(where, what,
                        "source and destination overlap at " +
                            slot_text(op.dst_rank, op.dst_buffer, op.dst_index + j));
      }
    }
  }
  TracedValues traced;
  const int index = static_cast<int>(operations_.size());
  std::vector<Value> results;
  for (int i = 0; i < count; ++i) {
    const Value& s = state_->locations[src_keys[i]].value;
    const Value& d = state_->locations[dst_keys[i]].value;
    traced.src.push_back(s);
    traced.dst_before.push_back(d);
    if (kind == OpKind::kCopy) {
      results.push_back(s);
      continue;
    }
    if (s.chunk != d.chunk) {
      throw UserError(where, what,
                      "reduces " + value_text(collective_, s) + " into " +
                          value_text(collective_, d) + " at " +
                          slot_text(op.dst_rank, op.dst_buffer, op.dst_index + i) +
                          "; only contributions to the same chunk can be reduced");
    }
    if (!disjoint(s.parts, d.parts)) {
      throw UserError(where, what,
                      "reduces " + value_text(collective_, s) + " into " +
                          value_text(collective_, d) + " at " +
                          slot_text(op.dst_rank, op.dst_buffer, op.dst_index + i) +
                          ": a contribution would be counted twice");
    }
    results.push_back(Value{s.chunk, merged(s.parts, d.parts)});
  }
  // Chunk DAG edges: true dependencies on the writers of what is read, false ones (WAR, WAW)
  // on what the write overwrites (MSCCLang sec. 4.1).
  std::vector<int> deps;
  for (int i = 0; i < count; ++i) {
    const Location& s = state_->locations[src_keys[i]];
    if (s.last_writer >= 0) deps.push_back(s.last_writer);
    const Location& d = state_->locations[dst_keys[i]];
    if (d.last_writer >= 0) deps.push_back(d.last_writer);
    deps.insert(deps.end(), d.readers.begin(), d.readers.end());
  }
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  op.depends_on = std::move(deps);

  for (int i = 0; i < count; ++i) state_->locations[src_keys[i]].readers.push_back(index);
  for (int i = 0; i < count; ++i) {
    Location& d = state_->locations[dst_keys[i]];
    d.value = results[i];
    d.version = state_->next_version++;
    d.last_writer = index;
    d.readers.clear();
  }
  if (op.dst_buffer.kind == BufferKind::kScratch) {
    int& size = state_->scratch_sizes[op.dst_buffer.name];
    size = std::max(size, op.dst_index + count);
  }
  operations_.push_back(std::move(op));
  state_->traced.push_back(std::move(traced));
  return make_ref(dst_rank, dst_buffer, dst_index, dst_keys);
}

// ---------------------------------------------------------------------------------------------
// Directives

void DslProgram::check_directives(const Operation& op) {
  const std::string what = op_name(op.kind);
  const Directives& d = op.directives;
  if (d.channel < -1 || d.sendtb < -1 || d.recvtb < -1) {
    throw UserError(op.where, what, "channels and threadblocks are >= 0 (or -1 for any)");
  }
  if (d.channel >= kMaxChannels) {
    throw UserError(op.where, what,
                    "channel " + text(d.channel) + " is over the runtime's " + text(kMaxChannels) +
                        " channels");
  }
  for (int tb : {d.sendtb, d.recvtb}) {
    if (tb >= kMaxThreadblocks) {
      throw UserError(op.where, what,
                      "threadblock " + text(tb) + " is over the runtime's " +
                          text(kMaxThreadblocks) + " threadblocks per rank");
    }
  }
  if (!op.remote()) return;  // local copies and reductions run on any threadblock
  for (int i = 0; i < op.parallel; ++i) {
    const int channel = d.channel < 0 && op.parallel == 1 ? -1 : std::max(d.channel, 0);
    const int channel_key = channel < 0 ? -1 : instance_key(channel, i, kMaxChannels);
    if (d.sendtb >= 0) {
      bind_threadblock(op, op.src_rank, instance_key(d.sendtb, i, kMaxThreadblocks), op.dst_rank,
                       true, channel_key);
    }
    if (d.recvtb >= 0) {
      bind_threadblock(op, op.dst_rank, instance_key(d.recvtb, i, kMaxThreadblocks), op.src_rank,
                       false, channel_key);
    }
  }
}

namespace {

// "threadblock 3" or, for a parallel instance's key, "threadblock 3 (parallel instance 1)".
std::string key_text(const std::string& what, int key, int limit) {
  std::string out = what + " " + text(key % limit);
  if (key >= limit) out += " (parallel instance " + text(key / limit) + ")";
  return out;
}

}  // namespace

void DslProgram::bind_threadblock(const Operation& op, int rank, int tb, int peer, bool send,
                                  int channel) {
  const std::string what = op_name(op.kind);
  const std::string tb_text =
      key_text("threadblock", tb, kMaxThreadblocks) + " of rank " + text(rank);
  DirectedThreadblock& t = state_->threadblocks[{rank, tb}];
  if (t.where.empty()) t.where = op.where;
  int& fixed_peer = send ? t.send_peer : t.recv_peer;
  if (fixed_peer >= 0 && fixed_peer != peer) {
    throw UserError(op.where, what,
                    tb_text + " already " + (send ? "sends to rank " : "receives from rank ") +
                        text(fixed_peer) + " (" + t.where + "); a threadblock has one " +
                        (send ? "send" : "receive") + " peer, so it cannot also " +
                        (send ? "send to rank " : "receive from rank ") + text(peer));
  }
  fixed_peer = peer;
  if (channel >= 0 && t.channel >= 0 && t.channel != channel) {
    throw UserError(op.where, what,
                    tb_text + " runs on " + key_text("channel", t.channel, kMaxChannels) + " (" +
                        t.where + "); it cannot also use " +
                        key_text("channel", channel, kMaxChannels));
  }
  if (channel >= 0) t.channel = channel;
  const int src = send ? rank : peer;
  const int dst = send ? peer : rank;
  const int connection_channel = std::max(channel, 0);
  auto& bound = send ? state_->send_threadblock : state_->recv_threadblock;
  auto [it, inserted] = bound.try_emplace({src, dst, connection_channel}, tb);
  if (!inserted && it->second != tb) {
    throw UserError(op.where, what,
                    std::string("two ") + (send ? "sends" : "receives") + " on the connection " +
                        text(src) + " -> " + text(dst) + " " +
                        key_text("channel", connection_channel, kMaxChannels) +
                        " in different threadblocks (" + text(it->second % kMaxThreadblocks) +
                        " and " + text(tb % kMaxThreadblocks) + " of rank " + text(rank) +
                        "); a connection has one " + (send ? "sending" : "receiving") +
                        " threadblock: give the operations different channels");
  }
}

// ---------------------------------------------------------------------------------------------
// Postcondition

void DslProgram::check() const {
  if (!parallel_stack_.empty()) {
    throw UserError("", "parallelize", "a parallelize() scope is still open");
  }
  for (int k = 0; k < collective_.num_chunks(); ++k) {
    const ChunkSpec& spec = collective_.chunks[k];
    std::vector<int> all(spec.pre.size());
    std::iota(all.begin(), all.end(), 0);
    const Value expected{k, collective_.combining ? all : std::vector<int>{}};
    for (const Slot& slot : spec.post) {
      const LocationKey key = location_key(collective_, options_.inplace, slot.rank,
                                           Buffer::output(), slot.index, "", "postcondition");
      auto it = state_->locations.find(key);
      const Value got = it == state_->locations.end() ? Value{} : it->second.value;
      if (got == expected) continue;
      throw UserError(options_.name, "postcondition",
                      slot_text(slot.rank, Buffer::output(), slot.index) + " must hold " +
                          value_text(collective_, expected) + " at the end of the program, " +
                          "but holds " + value_text(collective_, got));
    }
  }
}

}  // namespace ccsynth::lang
