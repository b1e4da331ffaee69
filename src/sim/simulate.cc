#include "ccsynth/sim/simulate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <optional>
#include <tuple>
#include <utility>

#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "event_queue.h"
#include "network.h"
#include "timeline.h"

namespace ccsynth::sim {

const ProtocolParams& SimOptions::params(Protocol protocol) const {
  switch (protocol) {
    case Protocol::kLL: return ll;
    case Protocol::kLL128: return ll128;
    case Protocol::kSimple: break;
  }
  return simple;
}

int chunks_per_call(const SimOptions& options, const ProtocolParams& params, double chunk_bytes) {
  constexpr int kUnlimited = 1 << 24;  // more chunks than any step carries
  if (!options.pipelining || options.num_slices > 0 || !(chunk_bytes > 0.0)) return kUnlimited;
  const double fit = std::floor(static_cast<double>(params.slice_bytes) / chunk_bytes);
  return static_cast<int>(std::clamp(fit, 1.0, static_cast<double>(kUnlimited)));
}

const ProtocolCost& protocol_cost(const Topology& topology, Protocol protocol) {
  switch (protocol) {
    case Protocol::kLL: return topology.ll;
    case Protocol::kLL128: return topology.ll128;
    case Protocol::kSimple: break;
  }
  return topology.simple;
}

double bus_factor(CollectiveKind kind, int num_ranks) {
  const double r = num_ranks;
  switch (kind) {
    case CollectiveKind::kAllReduce: return 2.0 * (r - 1.0) / r;  // nccl-tests doc/PERFORMANCE.md
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kGather:
    case CollectiveKind::kScatter: return (r - 1.0) / r;
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce:
    case CollectiveKind::kCustom: break;
  }
  return 1.0;
}

double nccl_size_bytes(CollectiveKind kind, int num_ranks, int64_t bytes) {
  const bool output_sized = kind == CollectiveKind::kAllGather || kind == CollectiveKind::kGather;
  return output_sized ? static_cast<double>(bytes) * num_ranks : static_cast<double>(bytes);
}

namespace {

constexpr uint8_t kSendFlag = 1;
constexpr uint8_t kRecvFlag = 2;
// Step instances (steps x slices) one simulation may execute: about 5 s at 7 M/s; a per-rank
// size such as 1T would otherwise run for minutes (docs/simulator.md "Limits").
constexpr int64_t kMaxInstances = int64_t{1} << 25;
// A program with more steps than that (the 4096-rank mesh allgather has 33.5 M) is still
// simulated at up to this many slices per chunk: its size is the program's, not an absurd
// per-rank size.
constexpr int64_t kSlicesBeyondTheCap = 4;
constexpr int64_t kMaxRecordedInstances = 40'000'000;

// Memory traffic per byte moved by a step's local work: a copy reads and writes (2), a
// reduction reads two operands and writes one (3); a receive copies out of the FIFO (2); `rrs`
// reads the FIFO and the local operand and writes nothing locally (2). Plain sends are bound by
// the link, not memory.
double memory_factor(StepType type) {
  switch (type) {
    case StepType::kSend:
    case StepType::kNop: return 0.0;
    case StepType::kRecv:
    case StepType::kRecvCopySend:
    case StepType::kRecvReduceSend:
    case StepType::kCopy: return 2.0;
    case StepType::kRecvReduceCopy:
    case StepType::kRecvReduceCopySend:
    case StepType::kReduce: return 3.0;
  }
  return 0.0;
}

// One step of a threadblock, flattened for the hot loop (16 bytes: the steps of the threadblocks
// running at once are much of what the event loop reads, docs/simulator.md "Performance").
struct SimStep {
  uint8_t flags = 0;
  uint8_t type = static_cast<uint8_t>(StepType::kNop);
  int count = 0;
  int dep_tb = -1;  // global threadblock index or -1
  int dep_step = -1;

  StepType step_type() const { return static_cast<StepType>(type); }
};

// Where a threadblock is: the event loop reads this for every step instance, of the running
// threadblock and of those it wakes, so it is one cache line that holds a copy of the step it is
// at (with half a million threadblocks, TACOS's 512-rank rfs allreduce, reading the step from
// steps_ was a second cache miss per wake). The next step instance is step `step` of slice
// `slice` (slice-major, MSCCLang fig. 5); the threadblock is done when `slice` reaches the
// simulation's slice count.
struct alignas(64) TbState {
  SimStep current;     // steps_[first_step + step] while not done
  int first_step = 0;  // index of step 0 in steps_
  int num_steps = 0;
  int step = 0;
  int slice = 0;
  int send_conn = -1;
  int recv_conn = -1;
  // The threadblocks waiting for a step of this one (dependencies): the newest of its
  // WaiterChunks, -1 for none.
  int dep_waiters = -1;
  bool busy = false;
  bool waiting_dep = false;

  // Finished step instances.
  int64_t progress() const { return static_cast<int64_t>(slice) * num_steps + step; }
};
static_assert(sizeof(TbState) == 64);

// Up to kIds threadblocks waiting for a step of one threadblock, oldest first, and the chunk
// of the ones that waited before them (-1: none). Chunks come from a pool whose free ones are
// reused newest first, so they are usually in cache; a threadblock that completes a step reads
// its waiters from one cache line (a vector per threadblock was two cache misses per completion
// at thousands of ranks, its header and its buffer; a list through the waiters' own states a
// miss per waiter, one after the other).
struct WaiterChunk {
  static constexpr int kIds = 14;
  int ids[kIds];
  int count = 0;
  int older = -1;
};
static_assert(sizeof(WaiterChunk) == 64);

// A sending threadblock's transfer, read only at its sends.
struct TbTransfer {
  // A send waiting for lanes: when it became ready, when its local work ends, its bytes.
  double pending_begin = 0.0;
  double pending_memory_end = 0.0;
  double pending_bytes = 0.0;
  // The running transfer: start and duration (once known).
  double transfer_start = 0.0;
  double transfer_us = 0.0;
  int64_t pending_pred = -1;  // critical-path predecessors
  int64_t transfer_pred = -1;
  int held_route = -1;     // the route whose groups the running transfer holds
  int pending_alphas = 1;  // runtime calls the pending send takes, each paying alpha
};

// A transfer moving bytes through shared groups: its bytes left, its current us per byte and
// when those were updated (its end event is in data_ends_). Flows live in a pool of slots reused
// as transfers end, apart from the threadblocks: every flow of a port is re-timed whenever one
// joins or leaves, and the few thousand running at once stay in cache where the threadblocks
// (half a million in TACOS's 512-rank rfs allreduce) do not.
struct Flow {
  static constexpr double kUntimed = -1.0;  // us_per_byte before the flow's first share
  double remaining = 0.0;
  double us_per_byte = 0.0;
  double updated = 0.0;
  int tb = -1;
  int route = -1;
  uint32_t stamp = 0;
};

// What only reports and errors read: the threadblock's rank and index there, and the id of its
// instance 0 in the critical-path records.
struct TbInfo {
  int rank = 0;
  int local_id = 0;
  int64_t base = 0;
};

// A FIFO connection from a sending to a receiving threadblock (one (peer, channel) pair).
struct Conn {
  int sender = -1;
  int receiver = -1;
  int route = -1;
  int64_t sent = 0;
  int64_t arrived = 0;
  int64_t consumed = 0;
};

// Critical-path record of one step instance.
struct Record {
  double start = 0.0;
  double end = 0.0;
  int64_t pred = -1;
};

}  // namespace

int infer_input_chunks(const Program& program) {
  int input = 0;
  int output = 0;
  for (const GpuProgram& gpu : program.gpus) {
    input = std::max(input, gpu.input_chunks);
    output = std::max(output, gpu.output_chunks);
  }
  if (input > 0) return input;
  const bool gathers = program.collective == CollectiveKind::kAllGather ||
                       program.collective == CollectiveKind::kGather;
  if (gathers && program.num_ranks > 0) return std::max(1, output / program.num_ranks);
  return std::max(1, output);
}

namespace {

class Simulator {
 public:
  Simulator(const Program& program, const Topology& topology, int64_t bytes,
            const SimOptions& options)
      : program_(program),
        topology_(topology),
        bytes_(bytes),
        options_(options),
        params_(options.params(program.protocol)),
        cost_(protocol_cost(topology, program.protocol)),
        network_(topology) {}

  // Simulates the program, whose connections validated_connections paired (let go once they
  // are numbered: millions at thousands of ranks).
  SimResult run(std::vector<PairedConnection> connections) {
    check_shapes();
    plan_slices();
    build_threadblocks();
    build_connections(connections);
    connections = {};
    allocate_records();
    execute();
    if (!stopped_) check_finished();
    return result();
  }

 private:
  void check_shapes() const {
    if (bytes_ < 0) throw UserError("", "bytes", "size must be >= 0");
    if (program_.num_ranks != topology_.num_ranks ||
        static_cast<int>(program_.gpus.size()) != topology_.num_ranks) {
      throw UserError(program_.name, "ngpus",
                      "program has " + std::to_string(program_.gpus.size()) +
                          " gpus but topology '" + topology_.name + "' has " +
                          std::to_string(topology_.num_ranks) + " ranks");
    }
    for (size_t i = 0; i < program_.gpus.size(); ++i) {
      if (program_.gpus[i].rank != static_cast<int>(i)) {
        throw UserError(program_.name, "gpu[" + std::to_string(i) + "].id",
                        "gpus must be numbered 0..ngpus-1 in order");
      }
    }
    if (params_.slice_bytes <= 0 || params_.fifo_slots <= 0) {
      throw UserError("", "protocol", "slice_bytes and fifo_slots must be positive");
    }
  }

  // Slices per chunk: chunks larger than a FIFO slot are cut into slot-sized tiles
  // (MSCCLang sec. 6.2, "Pipelining").
  void plan_slices() {
    const int chunks =
        options_.input_chunks > 0 ? options_.input_chunks : infer_input_chunks(program_);
    chunk_bytes_ = static_cast<double>(bytes_) / chunks;
    if (options_.num_slices > 0) {
      slices_ = options_.num_slices;
    } else if (!options_.pipelining) {
      slices_ = 1;
    } else {
      slices_ = static_cast<int>(std::max<double>(
          1.0, std::ceil(chunk_bytes_ / static_cast<double>(params_.slice_bytes))));
    }
    slice_bytes_ = chunk_bytes_ / slices_;
    chunks_per_call_ = chunks_per_call(options_, params_, chunk_bytes_);
    const double gbps = options_.memory_bandwidth_gbps < 0.0 ? topology_.memory_gbps
                                                             : options_.memory_bandwidth_gbps;
    memory_us_per_byte_ = gbps > 0.0 ? 1.0 / (gbps * 1e3) : 0.0;
  }

  void build_threadblocks() {
    rank_tb_offset_.assign(program_.gpus.size() + 1, 0);
    for (size_t r = 0; r < program_.gpus.size(); ++r) {
      rank_tb_offset_[r + 1] =
          rank_tb_offset_[r] + static_cast<int>(program_.gpus[r].threadblocks.size());
    }
    tbs_.resize(rank_tb_offset_.back());
    steps_.reserve(program_.total_steps());
    transfers_.resize(tbs_.size());
    info_.resize(tbs_.size());
    int64_t instances = 0;
    for (size_t r = 0; r < program_.gpus.size(); ++r) {
      const GpuProgram& gpu = program_.gpus[r];
      for (size_t i = 0; i < gpu.threadblocks.size(); ++i) {
        const Threadblock& tb = gpu.threadblocks[i];
        const size_t t = rank_tb_offset_[r] + i;
        TbState& state = tbs_[t];
        info_[t] = TbInfo{static_cast<int>(r), static_cast<int>(i), instances};
        state.first_step = static_cast<int>(steps_.size());
        state.num_steps = static_cast<int>(tb.steps.size());
        if (state.num_steps == 0) state.slice = slices_;  // nothing to run
        instances += static_cast<int64_t>(state.num_steps) * slices_;
        for (size_t s = 0; s < tb.steps.size(); ++s) steps_.push_back(flatten(gpu, i, s));
        if (state.num_steps > 0) state.current = steps_[state.first_step];
      }
    }
    const int64_t cap =
        std::max(kMaxInstances, kSlicesBeyondTheCap * static_cast<int64_t>(steps_.size()));
    if (instances > cap) {
      throw UserError("", "sizes",
                      "simulating " + std::to_string(bytes_) + " bytes per rank needs " +
                          std::to_string(instances) +
                          " step instances (steps x slices), more "
                          "than the cap of " +
                          std::to_string(cap) +
                          "; use a smaller size or fewer slices (larger slice size)");
    }
    instances_ = instances;
  }

  SimStep flatten(const GpuProgram& gpu, size_t tb_index, size_t step_index) const {
    const Threadblock& tb = gpu.threadblocks[tb_index];
    const Step& step = tb.steps[step_index];
    SimStep out;
    out.type = static_cast<uint8_t>(step.type);
    out.count = std::max(0, step.count);
    out.flags = static_cast<uint8_t>((sends(step.type) ? kSendFlag : 0) |
                                     (receives(step.type) ? kRecvFlag : 0));
    if (step.dep_tb >= 0) {
      if (step.dep_tb >= static_cast<int>(gpu.threadblocks.size()) || step.dep_step < 0 ||
          step.dep_step >= static_cast<int>(gpu.threadblocks[step.dep_tb].steps.size())) {
        throw UserError(program_.name,
                        "gpu[" + std::to_string(gpu.rank) + "].tb[" + std::to_string(tb_index) +
                            "].step[" + std::to_string(step_index) + "]",
                        "dependency on a step that does not exist");
      }
      out.dep_tb = rank_tb_offset_[gpu.rank] + step.dep_tb;
      out.dep_step = step.dep_step;
    }
    return out;
  }

  // The connections of validated_connections (in (src rank, dst rank, channel) order), between
  // global threadblock indices, each with its route. Every threadblock that sends (receives) has
  // its connection there: validate_structure checked the peers of sending and receiving steps
  // and matched every end.
  void build_connections(const std::vector<PairedConnection>& connections) {
    conns_.reserve(connections.size());
    for (const PairedConnection& c : connections) {
      Conn conn;
      conn.sender = rank_tb_offset_[c.sender] + c.sender_tb;
      conn.receiver = rank_tb_offset_[c.receiver] + c.receiver_tb;
      conn.route = network_.route(c.sender, c.receiver);
      tbs_[conn.sender].send_conn = static_cast<int>(conns_.size());
      tbs_[conn.receiver].recv_conn = static_cast<int>(conns_.size());
      conns_.push_back(conn);
    }
  }

  std::string field_of(const TbInfo& info, int step) const {
    std::string out =
        "gpu[" + std::to_string(info.rank) + "].tb[" + std::to_string(info.local_id) + "]";
    if (step >= 0) out += ".step[" + std::to_string(step) + "]";
    return out;
  }

  void allocate_records() {
    record_ = options_.critical_path && instances_ <= kMaxRecordedInstances;
    if (record_) records_.assign(instances_, Record{});
    if (options_.record_timeline) timeline_.emplace(options_.timeline_limit);
  }

  void execute() {
    for (int t = 0; t < static_cast<int>(tbs_.size()); ++t) try_advance(t, 0.0, -1);
    data_ends_.resize(tbs_.size());  // at most one flow per threadblock
    while (!events_.empty() || !data_ends_.empty()) {
      // The earlier of the next event and the next data end, as one queue would order them.
      if (events_.empty() || (!data_ends_.empty() && data_ends_.top() < events_.top())) {
        if (data_ends_.top().time + topology_.launch_us > options_.stop_after_us) {
          stop_at(data_ends_.top().time);
          break;
        }
        const int flow = data_ends_.top().tb;
        now_ = data_ends_.top().time;
        data_ends_.pop();
        end_data(flow);
        continue;
      }
      const Event event = events_.top();
      if (event.time + topology_.launch_us > options_.stop_after_us) {
        stop_at(event.time);
        break;
      }
      events_.pop();
      now_ = event.time;
      switch (event.kind) {
        case EventKind::kComplete: complete(event.tb); break;
        case EventKind::kAlphaEnd: start_data(event.tb); break;
      }
    }
    // Launch overhead: once per collective call (Topology::launch_us).
    now_ += topology_.launch_us;
  }

  // SimOptions::stop_after_us: the next event, at `time`, already ends the collective later
  // (every event after it is at least as late); the result's time is that event's.
  void stop_at(double time) {
    stopped_ = true;
    now_ = time;
  }

  // Starts the threadblock's next step instance if its dependency, message and FIFO slot are
  // ready; `pred` is the instance whose completion made this call (for the critical path).
  void try_advance(int tb, double now, int64_t pred) {
    TbState& state = tbs_[tb];
    if (state.busy || state.slice >= slices_) return;
    const int64_t slice = state.slice;
    const SimStep& step = state.current;
    if (step.dep_tb >= 0) {
      TbState& dep = tbs_[step.dep_tb];
      // Dependency flags are per slice (docs/formats.md sec. 5): wait for the same slice of the step.
      if (dep.progress() <= slice * dep.num_steps + step.dep_step) {
        if (!state.waiting_dep) {
          add_waiter(dep, tb);
          state.waiting_dep = true;
        }
        return;
      }
    }
    if ((step.flags & kRecvFlag) &&
        conns_[state.recv_conn].arrived <= conns_[state.recv_conn].consumed) {
      return;  // woken when the message lands
    }
    if ((step.flags & kSendFlag) &&
        conns_[state.send_conn].sent - conns_[state.send_conn].consumed >= params_.fifo_slots) {
      return;  // back-pressure: woken when the receiver frees a slot
    }
    start(tb, step, now, pred);
  }

  void start(int tb, const SimStep& step, double now, int64_t pred) {
    TbState& state = tbs_[tb];
    const double bytes = step.count * slice_bytes_;
    const double memory_end = now + memory_factor(step.step_type()) * bytes * memory_us_per_byte_;
    state.busy = true;
    // complete() reads the step after this one, long after the last touch of its cache line.
    const int next = state.step + 1 < state.num_steps ? state.step + 1 : 0;
    __builtin_prefetch(&steps_[state.first_step + next]);
    if (!(step.flags & kSendFlag)) {
      finish_at(tb, now, memory_end, pred);
      return;
    }
    TbTransfer& transfer = transfers_[tb];
    transfer.pending_begin = now;
    transfer.pending_memory_end = memory_end;
    transfer.pending_bytes = bytes;
    transfer.pending_alphas = (step.count + chunks_per_call_ - 1) / chunks_per_call_;
    transfer.pending_pred = pred;
    try_transfer(tb, now, pred);
  }

  // Starts the pending transfer of `tb` if its lanes are free, else queues it. The local work
  // of a sending step (reduce, copy out of the FIFO) streams alongside the transfer, as NCCL's
  // primitives do, so the step ends when both are done.
  void try_transfer(int tb, double now, int64_t pred) {
    Conn& conn = conns_[tbs_[tb].send_conn];
    TbTransfer& transfer = transfers_[tb];
    int blocked = -1;
    if (!network_.acquire(conn.route, now, &blocked)) {
      network_.enqueue(blocked, tb);
      return;
    }
    transfer.held_route = conn.route;
    ++conn.sent;
    const int64_t first_pred = now > transfer.pending_begin ? pred : transfer.pending_pred;
    const Route& route = network_.routes()[conn.route];
    transfer.transfer_start = now;
    if (network_.shared_groups(conn.route).empty()) {
      // Links only: the transfer has its lanes to itself, so its end is known now: alpha +
      // beta * b on every lane of the route (SCCL sec. 3.6), scaled by the protocol; alpha once
      // per runtime call the step takes (chunks_per_call).
      const double cost = transfer.pending_alphas * route.alpha_us * cost_.alpha_factor +
                          route.beta_us_per_byte * cost_.beta_factor * transfer.pending_bytes;
      transfer.transfer_us = cost;
      const double end = std::max(transfer.pending_memory_end, now + cost);
      finish_at(tb, transfer.pending_begin, end, first_pred);
      return;
    }
    // Through switch ports: alpha first (concurrently with the port's other transfers), then
    // the bytes at a share of the bandwidth that changes as transfers start and finish.
    transfer.transfer_pred = first_pred;
    events_.push(Event{now + transfer.pending_alphas * route.alpha_us * cost_.alpha_factor, seq_++,
                       tb, EventKind::kAlphaEnd});
  }

  // The transfer of `tb` starts moving bytes: it joins the flows of its shared groups, and every
  // flow there gets its new share.
  void start_data(int tb) {
    TbTransfer& transfer = transfers_[tb];
    const int route = transfer.held_route;
    if (!(transfer.pending_bytes > 0.0) || network_.routes()[route].beta_us_per_byte <= 0.0) {
      end_transfer(tb);
      return;
    }
    int slot = static_cast<int>(flows_.size());
    if (free_flows_.empty()) {
      flows_.emplace_back();
    } else {
      slot = free_flows_.back();
      free_flows_.pop_back();
    }
    flows_[slot] = Flow{transfer.pending_bytes, Flow::kUntimed, now_, tb, route, stamp_};
    network_.join(route, slot);
    reshare(route);
  }

  // The bytes of flow `slot` have all arrived: it leaves its groups, the others speed up.
  void end_data(int slot) {
    const Flow flow = flows_[slot];
    network_.leave(flow.route, slot);
    free_flows_.push_back(slot);
    reshare(flow.route);
    end_transfer(flow.tb);
  }

  void end_transfer(int tb) {
    TbTransfer& transfer = transfers_[tb];
    transfer.transfer_us = now_ - transfer.transfer_start;
    finish_at(tb, transfer.pending_begin, std::max(transfer.pending_memory_end, now_),
              transfer.transfer_pred);
  }

  // Recomputes the share of every flow in the shared groups of `route` at now_. A flow whose
  // rate changed has the bytes it moved at the old rate subtracted and its end event replaced;
  // one whose bottleneck is elsewhere keeps its rate, bytes and end event as they are (most
  // flows on a port with many: a flow's rate is its busiest hop's, Network::us_per_byte).
  void reshare(int route) {
    ++stamp_;
    for (int group : network_.shared_groups(route)) {
      for (int f : network_.flows(group)) {
        Flow& flow = flows_[f];
        if (flow.stamp == stamp_) continue;
        flow.stamp = stamp_;
        const double us_per_byte = network_.us_per_byte(flow.route) * cost_.beta_factor;
        if (us_per_byte == flow.us_per_byte) continue;
        if (flow.us_per_byte > 0.0) {
          flow.remaining = std::max(0.0, flow.remaining - (now_ - flow.updated) / flow.us_per_byte);
        }
        flow.updated = now_;
        flow.us_per_byte = us_per_byte;
        data_ends_.set(Event{now_ + flow.remaining * flow.us_per_byte, seq_++, f});
      }
    }
  }

  void finish_at(int tb, double begin, double end, int64_t pred) {
    if (record_) records_[info_[tb].base + tbs_[tb].progress()] = Record{begin, end, pred};
    if (timeline_) [[unlikely]]
      record_step(tb, begin, end);
    events_.push(Event{end, seq_++, tb});
  }

  void record_step(int tb, double begin, double end) {
    const TbState& state = tbs_[tb];
    timeline_->step(info_[tb].rank, info_[tb].local_id, state.step, state.slice,
                    steps_[state.first_step + state.step].step_type(), begin, end);
  }

  void complete(int tb) {
    TbState& state = tbs_[tb];
    const SimStep step = state.current;
    // This instance, for the critical path (the predecessor of what it wakes); -1 without one,
    // so that completions do not read info_ (a cache miss each at thousands of ranks).
    const int64_t id = record_ ? info_[tb].base + state.progress() : -1;
    state.busy = false;
    if (++state.step == state.num_steps) {
      state.step = 0;
      ++state.slice;
    }
    if (state.slice < slices_) state.current = steps_[state.first_step + state.step];
    ++executed_;
    last_instance_ = id;
    if (step.flags & kSendFlag) {
      TbTransfer& transfer = transfers_[tb];
      if (timeline_) [[unlikely]] {
        timeline_->transfer(network_.routes()[transfer.held_route].groups, info_[tb].rank,
                            info_[tb].local_id, transfer.transfer_start,
                            transfer.transfer_start + transfer.transfer_us);
      }
      network_.release(transfer.held_route, transfer.transfer_us, now_, &freed_groups_);
      transfer.held_route = -1;
      for (int group : freed_groups_) {
        for (int waiter = network_.pop_waiter(group); waiter >= 0;
             waiter = network_.pop_waiter(group)) {
          try_transfer(waiter, now_, id);
        }
      }
      freed_groups_.clear();
      Conn& conn = conns_[state.send_conn];
      ++conn.arrived;
      try_advance(conn.receiver, now_, id);
    }
    if (step.flags & kRecvFlag) {
      Conn& conn = conns_[state.recv_conn];
      ++conn.consumed;
      try_advance(conn.sender, now_, id);
    }
    if (state.dep_waiters >= 0) {
      take_waiters(state);  // those that wait again while these wake start a new list
      for (int waiter : waking_) {
        tbs_[waiter].waiting_dep = false;
        try_advance(waiter, now_, id);
      }
      waking_.clear();
    }
    try_advance(tb, now_, id);
  }

  // Adds `tb` to the threadblocks waiting for a step of `dep`.
  void add_waiter(TbState& dep, int tb) {
    if (dep.dep_waiters < 0 || waiter_chunks_[dep.dep_waiters].count == WaiterChunk::kIds) {
      int chunk = free_waiter_chunk_;
      if (chunk >= 0) {
        free_waiter_chunk_ = waiter_chunks_[chunk].older;
      } else {
        chunk = static_cast<int>(waiter_chunks_.size());
        waiter_chunks_.emplace_back();
      }
      waiter_chunks_[chunk].count = 0;
      waiter_chunks_[chunk].older = dep.dep_waiters;
      dep.dep_waiters = chunk;
    }
    WaiterChunk& chunk = waiter_chunks_[dep.dep_waiters];
    chunk.ids[chunk.count++] = tb;
  }

  // Moves the waiters of `state` into waking_, oldest first, and frees their chunks.
  void take_waiters(TbState& state) {
    const size_t first = waking_.size();
    for (int chunk = state.dep_waiters; chunk >= 0;) {
      const WaiterChunk& c = waiter_chunks_[chunk];
      for (int i = c.count - 1; i >= 0; --i) waking_.push_back(c.ids[i]);
      const int older = c.older;
      waiter_chunks_[chunk].older = free_waiter_chunk_;
      free_waiter_chunk_ = chunk;
      chunk = older;
    }
    std::reverse(waking_.begin() + static_cast<std::ptrdiff_t>(first), waking_.end());
    state.dep_waiters = -1;
  }

  void check_finished() const {
    std::string blocked;
    int count = 0;
    for (size_t t = 0; t < tbs_.size(); ++t) {
      const TbState& state = tbs_[t];
      if (state.slice >= slices_) continue;
      if (count++ < 4) {
        if (!blocked.empty()) blocked += "; ";
        blocked += field_of(info_[t], state.step) + " (" +
                   to_string(steps_[state.first_step + state.step].step_type()) + ", slice " +
                   std::to_string(state.slice) + ")";
      }
    }
    if (count > 0) {
      throw UserError(
          program_.name, "threadblocks",
          "deadlock: " + std::to_string(count) + " threadblock(s) never finish, e.g. " + blocked);
    }
  }

  SimResult result() {
    SimResult out;
    out.bytes = bytes_;
    out.time_us = now_;
    out.stopped = stopped_;
    out.events = executed_;
    out.slices = slices_;
    out.chunk_bytes = chunk_bytes_;
    if (now_ > 0.0) {
      // nccl-tests: algbw = size / time, busbw = algbw * factor; bytes/us / 1e3 = GB/s.
      out.algbw_gbps =
          nccl_size_bytes(program_.collective, program_.num_ranks, bytes_) / (now_ * 1e3);
      out.busbw_gbps = out.algbw_gbps * bus_factor(program_.collective, program_.num_ranks);
    }
    out.links = network_.usage(now_);
    if (record_) out.critical_path = critical_path();
    if (timeline_) out.timeline = timeline_->finish(network_);
    return out;
  }

  std::vector<std::string> critical_path() const {
    std::vector<int64_t> chain;
    for (int64_t id = last_instance_; id >= 0; id = records_[id].pred) chain.push_back(id);
    std::reverse(chain.begin(), chain.end());
    const size_t limit = static_cast<size_t>(std::max(2, options_.critical_path_limit));
    std::vector<std::string> out;
    for (size_t i = 0; i < chain.size(); ++i) {
      if (chain.size() > limit && i == limit / 2) {
        out.push_back("... " + std::to_string(chain.size() - limit) + " more ...");
        i = chain.size() - (limit - limit / 2) - 1;
        continue;
      }
      out.push_back(describe(chain[i]));
    }
    return out;
  }

  std::string describe(int64_t id) const {
    // Threadblocks are stored in increasing `base` order.
    const auto it = std::upper_bound(info_.begin(), info_.end(), id,
                                     [](int64_t v, const TbInfo& s) { return v < s.base; });
    const TbInfo& info = *(it - 1);
    const TbState& state = tbs_[it - 1 - info_.begin()];
    const int64_t p = id - info.base;
    const int s = static_cast<int>(p % state.num_steps);
    const Threadblock& tb = program_.gpus[info.rank].threadblocks[info.local_id];
    const SimStep& step = steps_[state.first_step + s];
    char times[64];
    std::snprintf(times, sizeof times, "%.3f-%.3f us", records_[id].start, records_[id].end);
    std::string out = std::string(times) + " rank " + std::to_string(info.rank) + " tb " +
                      std::to_string(info.local_id) + " step " + std::to_string(s) + " (" +
                      to_string(step.step_type()) + ") slice " +
                      std::to_string(p / state.num_steps);
    if (step.flags & kRecvFlag) out += " <- rank " + std::to_string(tb.recv_peer);
    if (step.flags & kSendFlag) out += " -> rank " + std::to_string(tb.send_peer);
    return out;
  }

  const Program& program_;
  const Topology& topology_;
  int64_t bytes_;
  const SimOptions& options_;
  const ProtocolParams& params_;
  const ProtocolCost& cost_;
  Network network_;

  double chunk_bytes_ = 0.0;
  double slice_bytes_ = 0.0;
  double memory_us_per_byte_ = 0.0;
  int slices_ = 1;
  int chunks_per_call_ = 1;
  int64_t instances_ = 0;

  std::vector<int> rank_tb_offset_;
  std::vector<TbState> tbs_;
  std::vector<TbTransfer> transfers_;
  std::vector<TbInfo> info_;
  std::vector<SimStep> steps_;
  std::vector<Conn> conns_;
  std::vector<int> waking_;
  std::vector<WaiterChunk> waiter_chunks_;  // pool, see WaiterChunk
  int free_waiter_chunk_ = -1;              // free chunks, linked through `older`
  std::vector<int> freed_groups_;
  BucketedEventQueue events_;
  std::vector<Flow> flows_;      // slots, see Flow
  std::vector<int> free_flows_;  // slots of ended flows
  EventHeap<true> data_ends_;    // of the flows, indexed by slot
  int64_t seq_ = 0;
  uint32_t stamp_ = 0;
  double now_ = 0.0;
  int64_t executed_ = 0;
  int64_t last_instance_ = -1;
  bool record_ = false;
  bool stopped_ = false;  // SimOptions::stop_after_us reached
  std::vector<Record> records_;
  std::optional<TimelineRecorder> timeline_;  // SimOptions::record_timeline
};

}  // namespace

bool simulate_alike(const Program& a, const Program& b) {
  return a.collective == b.collective && a.root == b.root && a.protocol == b.protocol &&
         a.num_channels == b.num_channels && a.chunks_per_loop == b.chunks_per_loop &&
         a.num_ranks == b.num_ranks && a.inplace == b.inplace && a.outofplace == b.outofplace &&
         a.gpus == b.gpus;
}

SimResult simulate(const Program& program, const Topology& topology, int64_t bytes,
                   const SimOptions& options) {
  // Offsets in bounds, every end of a connection matched.
  std::vector<PairedConnection> connections = validated_connections(program, program.name);
  return Simulator(program, topology, bytes, options).run(std::move(connections));
}

}  // namespace ccsynth::sim
