#include "ccsynth/mpi/mpi_executor.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <thread>
#include <tuple>

#include "ccsynth/core/error.h"
#include "ccsynth/runtime/kernels.h"

namespace ccsynth::mpi {

namespace {

using Clock = std::chrono::steady_clock;
using runtime::ExecOptions;
using runtime::ExecResult;
using runtime::RankBuffers;

constexpr int kControlTag = 0;         // failure notices, on the control communicator
constexpr int kNoticeBytes = 1024;     // text of a failure notice
constexpr int kSpinsBeforeSleep = 64;  // idle polls before giving the core away
constexpr std::chrono::microseconds kIdleSleep{20};

// One connection (src rank, dst rank, channel) of the program, the same in every process:
// its tag, its threadblocks and the counts of the messages of one slice, in order.
struct Connection {
  int src = 0;
  int dst = 0;
  int channel = 0;
  int sender_tb = -1;           // threadblock id on rank src
  int receiver_tb = -1;         // threadblock id on rank dst
  std::vector<int> counts;      // per message of one slice: its cnt
  std::vector<int> send_steps;  // per message of one slice: the sender's step index
  std::vector<int> recv_steps;  // per message of one slice: the receiver's step index
  int max_count = 1;
};

// The local end of a connection: FIFO slots of MPI requests and buffers.
struct Endpoint {
  int conn = -1;
  bool receiving = false;
  int peer_process = 0;
  int tag = 0;
  int64_t total = 0;   // messages of a run
  int64_t done = 0;    // sent (sender) or consumed (receiver)
  int64_t posted = 0;  // receives posted (receiver)
  size_t slot_bytes = 0;
  std::vector<std::byte> storage;
  std::vector<MPI_Request> requests;
  std::vector<char> complete;         // receiver: slot's message arrived
  std::vector<int64_t> slot_message;  // sender: the message whose send is in the slot
  // Per message of a slice: it moves without a staging copy (receiver: straight into the
  // step's destination; sender: straight from the step's memory).
  std::vector<char> direct;
};

// Memory a zero-copy send is still reading: no step may write it until the send completed.
struct BusyRegion {
  const std::byte* begin = nullptr;
  const std::byte* end = nullptr;
  int endpoint = -1;
  int64_t message = 0;
};

// A local threadblock as a resumable state machine, as in the CPU runtime: `progress` counts
// finished step instances (instance p is step p % num_steps of slice p / num_steps).
struct TbState {
  int rank = 0;
  int id = 0;
  int local_rank = 0;
  const Threadblock* tb = nullptr;
  int num_steps = 0;
  int in = -1;   // receiving endpoint
  int out = -1;  // sending endpoint
  int64_t progress = 0;
  int64_t total = 0;
};

enum class Block { kNone, kDependency, kReceive, kSend, kBusy };

// The memory of slice `slice` of `count` chunks from `offset` of a buffer: contiguous when the
// run has one slice per chunk or the step moves one chunk.
bool contiguous(const runtime::SliceShape& shape, int count) {
  return shape.slices == 1 || count == 1;
}

}  // namespace

// ---- Placement ------------------------------------------------------------------------------

Placement::Placement(int ranks, int processes) : num_ranks(ranks), num_processes(processes) {
  if (processes < 1 || ranks < processes) {
    throw UserError("", "ngpus",
                    "the program has " + std::to_string(ranks) + " ranks but the job has " +
                        std::to_string(processes) +
                        " processes: run it on at most as many processes as ranks (mpirun -np " +
                        std::to_string(ranks) + ")");
  }
}

int Placement::process_of(int rank) const {
  return static_cast<int>(static_cast<int64_t>(rank) * num_processes / num_ranks);
}

std::vector<int> Placement::ranks_of(int process) const {
  std::vector<int> out;
  for (int r = 0; r < num_ranks; ++r) {
    if (process_of(r) == process) out.push_back(r);
  }
  return out;
}

std::string Placement::describe() const {
  if (num_ranks == num_processes) {
    return std::to_string(num_ranks) + " ranks on " + std::to_string(num_processes) +
           " processes, one rank per process";
  }
  const int low = num_ranks / num_processes;
  const int high = (num_ranks + num_processes - 1) / num_processes;
  return std::to_string(num_ranks) + " ranks on " + std::to_string(num_processes) +
         (num_processes == 1 ? " process, " : " processes, ") +
         (low == high ? std::to_string(low) : std::to_string(low) + " or " + std::to_string(high)) +
         " ranks per process (blocks of consecutive ranks)";
}

// ---- MpiExecutor ----------------------------------------------------------------------------

struct MpiExecutor::Impl {
  Program program;
  Placement placement;
  MPI_Comm data = MPI_COMM_NULL;     // program messages, one tag per connection
  MPI_Comm control = MPI_COMM_NULL;  // failure notices
  int me = 0;
  std::vector<int> local;
  std::vector<Connection> conns;
  std::vector<Endpoint> endpoints;
  std::vector<TbState> tbs;
  std::vector<int> first_tb;                    // per local rank index: first TbState
  std::vector<std::vector<std::byte>> scratch;  // per local rank
  bool broken = false;

  // Failure notices: one posted receive, the outgoing texts kept alive until the job ends.
  MPI_Request notice_request = MPI_REQUEST_NULL;
  std::vector<char> notice_in = std::vector<char>(kNoticeBytes);
  std::vector<std::vector<char>> notices_out;
  std::vector<MPI_Request> notice_sends;

  // State of the current run.
  ExecOptions options;
  runtime::SliceShape shape;
  std::vector<runtime::RankBases> bases;      // per local rank
  std::vector<std::vector<BusyRegion>> busy;  // per local rank

  Impl(Program p, MPI_Comm comm) : program(std::move(p)), placement(1, 1) {
    runtime::CpuExecutor::validate(program);
    int processes = 1;
    MPI_Comm_size(comm, &processes);
    MPI_Comm_rank(comm, &me);
    try {
      placement = Placement(program.num_ranks, processes);
    } catch (const UserError& e) {
      throw UserError(program.name, e.field(), e.reason());
    }
    local = placement.ranks_of(me);
    build_connections();
    check_tags(comm);
    MPI_Comm_dup(comm, &data);
    MPI_Comm_dup(comm, &control);
    build_local();
    MPI_Irecv(notice_in.data(), kNoticeBytes, MPI_CHAR, MPI_ANY_SOURCE, kControlTag, control,
              &notice_request);
  }

  ~Impl() {
    if (broken) return;  // the job is being aborted: requests may still be pending
    if (notice_request != MPI_REQUEST_NULL) {
      MPI_Cancel(&notice_request);
      MPI_Wait(&notice_request, MPI_STATUS_IGNORE);
    }
    MPI_Comm_free(&data);
    MPI_Comm_free(&control);
  }

  [[noreturn]] void bad(const std::string& field, const std::string& reason) const {
    throw UserError(program.name, field, reason);
  }

  // ---- preparation (the same in every process) ----------------------------------------------

  void build_connections() {
    std::map<std::tuple<int, int, int>, int> index;
    for (const GpuProgram& gpu : program.gpus) {
      for (const Threadblock& tb : gpu.threadblocks) {
        if (tb.send_peer >= 0) {
          Connection& c =
              conns[runtime::connection_id(index, conns, gpu.rank, tb.send_peer, tb.channel)];
          c.sender_tb = tb.id;
          for (int s = 0; s < static_cast<int>(tb.steps.size()); ++s) {
            if (!sends(tb.steps[s].type)) continue;
            c.counts.push_back(tb.steps[s].count);
            c.send_steps.push_back(s);
            c.max_count = std::max(c.max_count, tb.steps[s].count);
          }
        }
      }
    }
    for (const GpuProgram& gpu : program.gpus) {
      for (const Threadblock& tb : gpu.threadblocks) {
        if (tb.recv_peer < 0) continue;
        Connection& c =
            conns[runtime::connection_id(index, conns, tb.recv_peer, gpu.rank, tb.channel)];
        c.receiver_tb = tb.id;
        for (int s = 0; s < static_cast<int>(tb.steps.size()); ++s) {
          if (receives(tb.steps[s].type)) c.recv_steps.push_back(s);
        }
        check_messages(c, tb);
      }
    }
  }

  // The k-th message the sender sends in a slice is the k-th the receiver receives: same number
  // of messages and the same cnt each (the CPU runtime finds these defects while running).
  void check_messages(const Connection& c, const Threadblock& receiver) const {
    const std::string sender =
        "gpu[" + std::to_string(c.src) + "]/tb[" + std::to_string(c.sender_tb) + "]";
    const std::string field =
        "gpu[" + std::to_string(c.dst) + "]/tb[" + std::to_string(receiver.id) + "]";
    if (c.recv_steps.size() != c.counts.size()) {
      bad(field, "receives " + std::to_string(c.recv_steps.size()) +
                     " message(s) per slice from rank " + std::to_string(c.src) + " on channel " +
                     std::to_string(c.channel) + " but " + sender + " sends " +
                     std::to_string(c.counts.size()));
    }
    for (size_t k = 0; k < c.counts.size(); ++k) {
      const int got = receiver.steps[c.recv_steps[k]].count;
      if (got != c.counts[k]) {
        bad(runtime::step_name(c.dst, receiver.id, c.recv_steps[k]),
            "count mismatch: receives cnt=" + std::to_string(got) + " but the matching send " +
                runtime::step_name(c.src, c.sender_tb, c.send_steps[k]) + " sends cnt=" +
                std::to_string(c.counts[k]) + " on channel " + std::to_string(c.channel));
      }
    }
  }

  void check_tags(MPI_Comm comm) const {
    int* tag_ub = nullptr;
    int found = 0;
    MPI_Comm_get_attr(comm, MPI_TAG_UB, &tag_ub, &found);
    const int64_t limit = found && tag_ub != nullptr ? *tag_ub : 32767;
    if (static_cast<int64_t>(conns.size()) > limit) {
      bad("connections", "the program has " + std::to_string(conns.size()) +
                             " connections but this MPI has only " + std::to_string(limit) +
                             " tags");
    }
  }

  const Step& step_of(int rank, int tb, int step) const {
    return program.gpus[rank].threadblocks[tb].steps[step];
  }

  int local_index(int rank) const {
    return static_cast<int>(std::find(local.begin(), local.end(), rank) - local.begin());
  }

  bool is_local(int rank) const { return placement.process_of(rank) == me; }

  void build_local() {
    std::vector<int> send_endpoint(conns.size(), -1);
    std::vector<int> recv_endpoint(conns.size(), -1);
    for (int c = 0; c < static_cast<int>(conns.size()); ++c) {
      const Connection& conn = conns[c];
      for (bool sending : {true, false}) {
        if (!is_local(sending ? conn.src : conn.dst)) continue;
        Endpoint e;
        e.conn = c;
        e.peer_process = placement.process_of(sending ? conn.dst : conn.src);
        e.tag = c + 1;
        e.receiving = !sending;
        (sending ? send_endpoint : recv_endpoint)[c] = static_cast<int>(endpoints.size());
        endpoints.push_back(std::move(e));
      }
    }
    std::map<std::tuple<int, int, int>, int> conn_index;
    for (int c = 0; c < static_cast<int>(conns.size()); ++c) {
      conn_index[{conns[c].src, conns[c].dst, conns[c].channel}] = c;
    }
    for (int i = 0; i < static_cast<int>(local.size()); ++i) {
      const GpuProgram& gpu = program.gpus[local[i]];
      first_tb.push_back(static_cast<int>(tbs.size()));
      for (const Threadblock& tb : gpu.threadblocks) {
        TbState s;
        s.rank = gpu.rank;
        s.id = tb.id;
        s.local_rank = i;
        s.tb = &tb;
        s.num_steps = static_cast<int>(tb.steps.size());
        if (tb.send_peer >= 0)
          s.out = send_endpoint[conn_index[{gpu.rank, tb.send_peer, tb.channel}]];
        if (tb.recv_peer >= 0)
          s.in = recv_endpoint[conn_index[{tb.recv_peer, gpu.rank, tb.channel}]];
        tbs.push_back(s);
      }
    }
    scratch.resize(local.size());
  }

  // ---- one run --------------------------------------------------------------------------------

  void prepare(const std::vector<RankBuffers>& buffers, int64_t elems, const ExecOptions& opts) {
    if (broken) {
      throw UserError(program.name, "run", "an earlier run failed: the job must be aborted");
    }
    if (static_cast<int>(buffers.size()) != program.num_ranks) {
      throw UserError(program.name, "buffers",
                      "got " + std::to_string(buffers.size()) + " rank buffers for " +
                          std::to_string(program.num_ranks) + " ranks");
    }
    if (elems <= 0) throw UserError(program.name, "chunk_elems", "chunks must not be empty");
    if (opts.fifo_slots < 1) throw UserError(program.name, "fifo_slots", "must be at least 1");
    options = opts;
    shape = runtime::slice_shape(program.protocol, elems, opts.dtype, opts);
    bases.assign(local.size(), {nullptr, nullptr, nullptr});
    for (size_t i = 0; i < local.size(); ++i) {
      const GpuProgram& gpu = program.gpus[local[i]];
      const RankBuffers& b = buffers[local[i]];
      if ((gpu.input_chunks > 0 && b.input == nullptr) ||
          (gpu.output_chunks > 0 && b.output == nullptr)) {
        throw UserError(program.name, "buffers",
                        "rank " + std::to_string(local[i]) + " has no input or output buffer");
      }
      const size_t scratch_bytes =
          static_cast<size_t>(gpu.scratch_chunks) * elems * shape.elem_bytes;
      if (scratch[i].size() < scratch_bytes) scratch[i].resize(scratch_bytes);
      bases[i] = {static_cast<std::byte*>(b.input), static_cast<std::byte*>(b.output),
                  scratch[i].data()};
    }
    for (Endpoint& e : endpoints) {
      const Connection& c = conns[e.conn];
      e.total = static_cast<int64_t>(c.counts.size()) * shape.slices;
      e.done = 0;
      e.posted = 0;
      e.slot_bytes = static_cast<size_t>(c.max_count) * shape.slice_elems * shape.elem_bytes;
      const size_t bytes = e.slot_bytes * opts.fifo_slots;
      if (e.storage.size() < bytes) e.storage.resize(bytes);
      e.requests.assign(opts.fifo_slots, MPI_REQUEST_NULL);
      e.complete.assign(opts.fifo_slots, 0);
      e.slot_message.assign(opts.fifo_slots, -1);
      e.direct.assign(c.counts.size(), 0);
      const bool receiving = e.receiving;
      for (size_t k = 0; k < c.counts.size(); ++k) {
        const StepType type = receiving ? step_of(c.dst, c.receiver_tb, c.recv_steps[k]).type
                                        : step_of(c.src, c.sender_tb, c.send_steps[k]).type;
        const bool copies = receiving
                                ? type == StepType::kRecv || type == StepType::kRecvCopySend
                                : type == StepType::kSend || type == StepType::kRecvCopySend ||
                                      type == StepType::kRecvReduceCopySend;
        e.direct[k] = copies && contiguous(shape, c.counts[k]) ? 1 : 0;
      }
    }
    busy.assign(local.size(), {});
    for (TbState& s : tbs) {
      s.progress = 0;
      s.total = static_cast<int64_t>(s.num_steps) * shape.slices;
    }
  }

  std::byte* slot(Endpoint& e, int64_t message) {
    return e.storage.data() + static_cast<size_t>(message % options.fifo_slots) * e.slot_bytes;
  }

  size_t message_bytes(const Endpoint& e, int64_t message) const {
    const Connection& c = conns[e.conn];
    const int64_t per_slice = static_cast<int64_t>(c.counts.size());
    return shape.message_bytes(c.counts[message % per_slice], message / per_slice);
  }

  bool is_direct(const Endpoint& e, int64_t message) const {
    return e.direct[static_cast<size_t>(message % static_cast<int64_t>(e.direct.size()))] != 0;
  }

  // Keeps up to fifo_slots receives posted ahead into the slots of a receiving endpoint, in
  // message order; a direct message stops it (its step posts it into its destination when it
  // runs, and MPI matches receives in the order they were posted).
  void post_receives(Endpoint& e) {
    while (e.posted < e.total && e.posted < e.done + options.fifo_slots &&
           !is_direct(e, e.posted)) {
      post_receive(e, slot(e, e.posted));
    }
  }

  void post_receive(Endpoint& e, std::byte* into) {
    const int s = static_cast<int>(e.posted % options.fifo_slots);
    e.complete[s] = 0;
    MPI_Irecv(into, static_cast<int>(message_bytes(e, e.posted)), MPI_BYTE, e.peer_process, e.tag,
              data, &e.requests[s]);
    ++e.posted;
  }

  const Step& current_step(const TbState& s) const {
    return s.tb->steps[static_cast<size_t>(s.progress % s.num_steps)];
  }

  const TbState& dependency(const TbState& s, const Step& step) const {
    return tbs[first_tb[s.local_rank] + step.dep_tb];
  }

  bool message_arrived(Endpoint& e) {
    const int s = static_cast<int>(e.done % options.fifo_slots);
    if (e.done >= e.posted) return false;
    if (!e.complete[s]) {
      int flag = 0;
      MPI_Test(&e.requests[s], &flag, MPI_STATUS_IGNORE);
      e.complete[s] = flag ? 1 : 0;
    }
    return e.complete[s] != 0;
  }

  bool slot_free(Endpoint& e) {
    MPI_Request& request = e.requests[e.done % options.fifo_slots];
    if (request == MPI_REQUEST_NULL) return true;
    int flag = 0;
    MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
    return flag != 0;
  }

  // The memory of slice `slice` of the step's `count` chunks at (buffer, offset): [begin, end)
  // of its first to its last piece.
  std::pair<std::byte*, std::byte*> region(const TbState& s, Buffer buffer, int offset, int count,
                                           int64_t slice) const {
    const size_t e = shape.elem_bytes;
    std::byte* base = bases[s.local_rank][static_cast<int>(buffer)];
    std::byte* begin =
        base + static_cast<size_t>(offset * shape.chunk_elems + slice * shape.slice_elems) * e;
    const int64_t last = shape.slices == 1 ? shape.length(slice) * count
                                           : (count - 1) * shape.chunk_elems + shape.length(slice);
    return {begin, begin + static_cast<size_t>(last) * e};
  }

  // True when a zero-copy send of this rank still reads memory overlapping [begin, end).
  bool busy_overlap(const TbState& s, const std::byte* begin, const std::byte* end) {
    std::vector<BusyRegion>& regions = busy[s.local_rank];
    bool overlap = false;
    for (size_t i = 0; i < regions.size();) {
      Endpoint& e = endpoints[regions[i].endpoint];
      const int slot_index = static_cast<int>(regions[i].message % options.fifo_slots);
      const bool done =
          e.slot_message[slot_index] != regions[i].message || slot_free_at(e, slot_index);
      if (done) {
        regions[i] = regions.back();
        regions.pop_back();
        continue;
      }
      overlap = overlap || (regions[i].begin < end && begin < regions[i].end);
      ++i;
    }
    return overlap;
  }

  bool slot_free_at(Endpoint& e, int slot_index) {
    MPI_Request& request = e.requests[slot_index];
    if (request == MPI_REQUEST_NULL) return true;
    int flag = 0;
    MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
    return flag != 0;
  }

  // What keeps threadblock s from running its next step instance (testing MPI requests). A
  // direct receive is posted here, once the step is next and may write its destination.
  Block blocked_on(TbState& s) {
    const Step& step = current_step(s);
    const int64_t slice = s.progress / s.num_steps;
    if (step.dep_tb >= 0) {
      const TbState& dep = dependency(s, step);
      if (dep.progress < slice * dep.num_steps + step.dep_step + 1) return Block::kDependency;
    }
    const bool direct_in = receives(step.type) && is_direct(endpoints[s.in], endpoints[s.in].done);
    if (writes_dst(step.type)) {
      Endpoint* in = receives(step.type) ? &endpoints[s.in] : nullptr;
      const bool posted = in != nullptr && direct_in && in->posted > in->done;
      if (!posted) {
        auto [begin, end] = region(s, step.dst_buffer, step.dst_offset, step.count, slice);
        if (busy_overlap(s, begin, end)) return Block::kBusy;
        if (direct_in) post_receive(*in, begin);
      }
    }
    if (receives(step.type) && !message_arrived(endpoints[s.in])) return Block::kReceive;
    if (sends(step.type) && !slot_free(endpoints[s.out])) return Block::kSend;
    return Block::kNone;
  }

  void run_instance(TbState& s) {
    const Step& step = current_step(s);
    const int64_t slice = s.progress / s.num_steps;
    const bool direct_in = receives(step.type) && is_direct(endpoints[s.in], endpoints[s.in].done);
    const bool direct_out = sends(step.type) && is_direct(endpoints[s.out], endpoints[s.out].done);
    const std::byte* in = nullptr;
    std::byte* out = nullptr;
    if (receives(step.type) && !direct_in) in = slot(endpoints[s.in], endpoints[s.in].done);
    if (sends(step.type) && !direct_out) out = slot(endpoints[s.out], endpoints[s.out].done);
    // The memory a direct send sends: the source of `s`, the destination of `rcs` / `rrcs`.
    const bool from_src = step.type == StepType::kSend;
    std::byte* begin = nullptr;
    std::byte* end = nullptr;
    if (direct_in || direct_out) {
      std::tie(begin, end) =
          region(s, from_src ? step.src_buffer : step.dst_buffer,
                 from_src ? step.src_offset : step.dst_offset, step.count, slice);
    }
    if (direct_in) {
      // The message is already in the destination (r, rcs); rcs may still stage its send.
      if (out != nullptr) std::memcpy(out, begin, static_cast<size_t>(end - begin));
    } else {
      runtime::execute_slice(step, slice, shape, options.dtype, options.op, bases[s.local_rank], in,
                             out);
    }
    if (receives(step.type)) {
      Endpoint& e = endpoints[s.in];
      ++e.done;
      post_receives(e);
    }
    if (sends(step.type)) {
      Endpoint& e = endpoints[s.out];
      const int slot_index = static_cast<int>(e.done % options.fifo_slots);
      const std::byte* message = direct_out ? begin : out;
      MPI_Isend(message, static_cast<int>(message_bytes(e, e.done)), MPI_BYTE, e.peer_process,
                e.tag, data, &e.requests[slot_index]);
      e.slot_message[slot_index] = e.done;
      if (direct_out) busy[s.local_rank].push_back(BusyRegion{begin, end, s.out, e.done});
      ++e.done;
    }
    ++s.progress;
  }

  // What threadblock s waits for, one line of a failure message.
  std::string describe(TbState& s) {
    const Step& step = current_step(s);
    const int64_t slice = s.progress / s.num_steps;
    std::string out = runtime::waiting_step(
        s.rank, s.id, static_cast<int>(s.progress % s.num_steps), step.type, slice);
    switch (blocked_on(s)) {
      case Block::kDependency: {
        const TbState& dep = dependency(s, step);
        out += runtime::dependency_wait(s.rank, dep.id, step.dep_step, slice, dep.progress,
                                        dep.num_steps, dep.total);
        break;
      }
      case Block::kReceive: {
        const Endpoint& e = endpoints[s.in];
        out += "waits to receive message " + std::to_string(e.done + 1) + " of " +
               std::to_string(e.total) + " from rank " + std::to_string(s.tb->recv_peer) +
               " (process " + std::to_string(e.peer_process) + ") on channel " +
               std::to_string(s.tb->channel);
        break;
      }
      case Block::kSend: {
        const Endpoint& e = endpoints[s.out];
        out += "waits for a free slot to rank " + std::to_string(s.tb->send_peer) + " (process " +
               std::to_string(e.peer_process) + ") on channel " + std::to_string(s.tb->channel) +
               " (all " + std::to_string(options.fifo_slots) + " sends in flight, none received)";
        break;
      }
      case Block::kBusy: out += "waits to write memory a send of its rank is still sending"; break;
      case Block::kNone: out += "is ready to run"; break;
    }
    return out;
  }

  std::string describe_waiting() {
    return runtime::list_unfinished(
        tbs.size(), [&](size_t i) { return tbs[i].progress < tbs[i].total; },
        [&](size_t i) { return describe(tbs[i]); }, " of process " + std::to_string(me));
  }

  // Tells every other process that this run failed (they stop and describe their own state).
  void notify_others(const std::string& reason) {
    int processes = 1;
    MPI_Comm_size(control, &processes);
    std::string text = "process " + std::to_string(me) + " stopped the run: " + reason;
    text.resize(kNoticeBytes - 1);
    for (int p = 0; p < processes; ++p) {
      if (p == me) continue;
      std::vector<char>& buffer = notices_out.emplace_back(text.begin(), text.end());
      buffer.push_back('\0');
      notice_sends.push_back(MPI_REQUEST_NULL);
      MPI_Isend(buffer.data(), kNoticeBytes, MPI_CHAR, p, kControlTag, control,
                &notice_sends.back());
    }
  }

  // A failure notice from another process, if one arrived.
  bool notice_arrived(std::string& text) {
    int flag = 0;
    MPI_Test(&notice_request, &flag, MPI_STATUS_IGNORE);
    if (!flag) return false;
    text.assign(notice_in.data(), strnlen(notice_in.data(), kNoticeBytes));
    return true;
  }

  ExecResult fail(ExecResult result, const std::string& cause, bool tell_others) {
    broken = true;
    result.ok = false;
    result.error = cause + "; " + describe_waiting();
    if (tell_others) notify_others(cause);
    return result;
  }

  ExecResult run(const std::vector<RankBuffers>& buffers, int64_t elems, const ExecOptions& opts) {
    prepare(buffers, elems, opts);
    const Clock::time_point start = Clock::now();
    const Clock::time_point deadline =
        start + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>(std::max(0.0, opts.timeout_s)));
    ExecResult result;
    result.slices = shape.slices;
    result.chunk_elems = shape.chunk_elems;
    result.workers = 1;
    for (TbState& s : tbs) {
      if (s.in >= 0) post_receives(endpoints[s.in]);
    }
    size_t finished = 0;
    for (const TbState& s : tbs) finished += s.total == 0 ? 1 : 0;
    int idle = 0;
    std::string notice;
    while (true) {
      bool moved = false;
      for (TbState& s : tbs) {
        while (s.progress < s.total && blocked_on(s) == Block::kNone) {
          run_instance(s);
          ++result.step_instances;
          moved = true;
          if (s.progress == s.total) ++finished;
        }
      }
      if (finished == tbs.size() && sends_done()) break;
      if (moved) {
        idle = 0;
        continue;
      }
      if (notice_arrived(notice)) return fail(result, notice, false);
      if (Clock::now() >= deadline) {
        return fail(result,
                    "timed out after " + std::to_string(opts.timeout_s) +
                        " s (deadlock, or a process that stopped answering)",
                    true);
      }
      if (++idle >= kSpinsBeforeSleep) {
        idle = 0;
        // Oversubscribed jobs (more processes than cores): give the core to the process this
        // one waits for. sched_yield barely does under Linux's CFS; a short sleep does.
        std::this_thread::sleep_for(kIdleSleep);
      }
    }
    result.time_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    return result;
  }

  // All sends of the run completed (their buffers are free for the next run).
  bool sends_done() {
    for (const TbState& s : tbs) {
      if (s.out < 0) continue;
      Endpoint& e = endpoints[s.out];
      int flag = 0;
      MPI_Testall(static_cast<int>(e.requests.size()), e.requests.data(), &flag,
                  MPI_STATUSES_IGNORE);
      if (!flag) return false;
    }
    return true;
  }
};

MpiExecutor::MpiExecutor(Program program, MPI_Comm comm)
    : impl_(std::make_unique<Impl>(std::move(program), comm)) {}
MpiExecutor::~MpiExecutor() = default;

const Program& MpiExecutor::program() const { return impl_->program; }
const Placement& MpiExecutor::placement() const { return impl_->placement; }
const std::vector<int>& MpiExecutor::local_ranks() const { return impl_->local; }
int MpiExecutor::process() const { return impl_->me; }
bool MpiExecutor::failed() const { return impl_->broken; }
MPI_Comm MpiExecutor::communicator() const { return impl_->data; }

runtime::ExecResult MpiExecutor::run(const std::vector<runtime::RankBuffers>& buffers,
                                     int64_t chunk_elems, const runtime::ExecOptions& options) {
  return impl_->run(buffers, chunk_elems, options);
}

Session::Session(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    MPI_Init(argc, argv);
    owned_ = true;
  }
}

Session::~Session() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owned_ && !finalized) MPI_Finalize();
}

void abort_job(MPI_Comm comm, int code, double grace_s) {
  std::cout.flush();
  std::cerr.flush();
  std::this_thread::sleep_for(std::chrono::duration<double>(std::max(0.0, grace_s)));
  MPI_Abort(comm, code);
  std::abort();  // MPI_Abort does not return
}

}  // namespace ccsynth::mpi
