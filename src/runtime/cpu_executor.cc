#include "ccsynth/runtime/cpu_executor.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include <unistd.h>

#include "ccsynth/core/error.h"
#include "ccsynth/runtime/kernels.h"

namespace ccsynth::runtime {

namespace {

using Clock = std::chrono::steady_clock;

// NCCL's per-slot data bytes (sim::SimOptions uses the same numbers): Simple 4 MiB / 8 slots,
// LL128 120/128 of 4.5 MiB / 8, LL 256 KiB / 8 at half density.
constexpr int64_t kSimpleSliceBytes = 512 * 1024;
constexpr int64_t kLL128SliceBytes = 576000;
constexpr int64_t kLLSliceBytes = 32 * 1024;

// A FIFO connection (src rank, dst rank, channel): `slots` slots of slot_bytes each; messages
// occupy slots head, head+1, ... (mod slots). `reserved` marks the slot a send is filling.
struct Connection {
  int src = 0;
  int dst = 0;
  int channel = 0;
  int sender = -1;    // global threadblock index
  int receiver = -1;  // global threadblock index
  int max_count = 1;  // largest count of a step sending on it (sizes the slots)
  // Run state.
  int head = 0;
  int published = 0;
  bool reserved = false;
  size_t slot_bytes = 0;
  std::vector<std::byte> storage;
  std::vector<int> msg_count;  // per slot: chunks of the message
  std::vector<int> msg_step;   // per slot: the sender's step index
};

// One threadblock as a resumable state machine: `progress` counts finished step instances,
// slice-major (instance p is step p % num_steps of slice p / num_steps, MSCCLang fig. 5).
struct TbState {
  int rank = 0;
  int id = 0;
  const Threadblock* tb = nullptr;
  int in_conn = -1;
  int out_conn = -1;
  int num_steps = 0;
  int64_t progress = 0;
  int64_t total = 0;
  bool queued = false;
  bool running = false;
  std::vector<int> dep_waiters;  // threadblocks blocked on this one's progress
};

// What keeps a threadblock from running its next step instance.
enum class Block { kNone, kDependency, kReceive, kSend };

// Resources a claimed step instance uses while it executes outside the lock.
struct Claim {
  int64_t instance = 0;
  int in_slot = -1;
  int out_slot = -1;
};

}  // namespace

int slices_per_chunk(Protocol protocol, int64_t chunk_elems, DataType dtype,
                     const ExecOptions& options) {
  if (chunk_elems <= 0) return 1;
  if (options.slices > 0) return static_cast<int>(std::min<int64_t>(options.slices, chunk_elems));
  int64_t slice_bytes = options.slice_bytes;
  if (slice_bytes <= 0) {
    slice_bytes = protocol == Protocol::kLL      ? kLLSliceBytes
                  : protocol == Protocol::kLL128 ? kLL128SliceBytes
                                                 : kSimpleSliceBytes;
  }
  const int64_t max_elems =
      std::max<int64_t>(1, slice_bytes / static_cast<int64_t>(size_of(dtype)));
  return static_cast<int>(std::min<int64_t>((chunk_elems + max_elems - 1) / max_elems, 1 << 30));
}

struct CpuExecutor::Impl {
  Program program;
  std::vector<TbState> tbs;
  std::vector<int> first_tb;  // per rank: global index of its threadblock 0
  std::vector<Connection> conns;
  std::vector<std::vector<std::byte>> scratch;  // per rank, kept between runs

  // State of the current run; everything below `mu` is guarded by it.
  ExecOptions options;
  SliceShape shape;
  std::vector<RankBases> bases;  // per rank: input, output, scratch
  Clock::time_point deadline;
  Clock::time_point run_start;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<int> ready;
  int running = 0;
  size_t finished = 0;
  bool stop = false;
  std::string error;
  int64_t step_instances = 0;
  std::vector<ExecStep> timeline;  // ExecOptions::record_timeline

  // Persistent pool threads (workers beyond the calling thread), kept between runs so a run
  // never waits for a thread to be created or first scheduled.
  std::vector<std::thread> pool;
  uint64_t generation = 0;  // incremented by every run; pool threads join runs they see
  int pool_wanted = 0;      // pool threads the current run uses
  int in_loop = 0;          // threads inside worker_loop for the current run
  bool shutdown = false;
  std::condition_variable pool_cv;  // wakes pool threads (separate from the scheduler's cv)

  explicit Impl(Program p) : program(std::move(p)) { build(); }

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mu);
      shutdown = true;
    }
    pool_cv.notify_all();
    for (std::thread& thread : pool) thread.join();
  }

  // Body of pool thread `index`: sleeps until a run starts, joins it if the run wants that many
  // threads and it is still going, and sleeps again. A thread that wakes after the run ended does
  // nothing, so a run never waits for a thread that is slow to be scheduled.
  void pool_main(int index) {
    std::unique_lock<std::mutex> lock(mu);
    uint64_t seen = 0;
    while (true) {
      pool_cv.wait(lock, [&] { return shutdown || generation != seen; });
      if (shutdown) return;
      seen = generation;
      if (stop || index >= pool_wanted) continue;
      ++in_loop;
      worker_loop(lock);
      if (--in_loop == 0) cv.notify_all();
    }
  }

  // ---- preparation -------------------------------------------------------------------------

  void build() {
    validate_structure(program, program.name);
    const int num_ranks = program.num_ranks;
    std::map<std::tuple<int, int, int>, int> index;
    for (int r = 0; r < num_ranks; ++r) {
      const GpuProgram& gpu = program.gpus[r];
      first_tb.push_back(static_cast<int>(tbs.size()));
      for (int t = 0; t < static_cast<int>(gpu.threadblocks.size()); ++t) {
        const Threadblock& tb = gpu.threadblocks[t];
        TbState state;
        state.rank = r;
        state.id = t;
        state.tb = &tb;
        state.num_steps = static_cast<int>(tb.steps.size());
        const int global = static_cast<int>(tbs.size());
        if (tb.send_peer >= 0) {
          state.out_conn = connection_id(index, conns, r, tb.send_peer, tb.channel);
          conns[state.out_conn].sender = global;
        }
        if (tb.recv_peer >= 0) {
          state.in_conn = connection_id(index, conns, tb.recv_peer, r, tb.channel);
          conns[state.in_conn].receiver = global;
        }
        tbs.push_back(state);
      }
    }
    for (const TbState& state : tbs) record_max_counts(state);
    scratch.resize(num_ranks);
  }

  // The largest count sent over each connection (validate_structure checked the steps).
  void record_max_counts(const TbState& state) {
    for (const Step& step : state.tb->steps) {
      if (!sends(step.type)) continue;
      Connection& c = conns[state.out_conn];
      c.max_count = std::max(c.max_count, step.count);
    }
  }

  // ---- scheduling (all under mu) -----------------------------------------------------------

  const Step& current_step(const TbState& s) const {
    return s.tb->steps[static_cast<size_t>(s.progress % s.num_steps)];
  }

  TbState& dependency(const TbState& s, const Step& step) {
    return tbs[first_tb[s.rank] + step.dep_tb];
  }

  // Dependency flags are per slice (docs/formats.md sec. 5): slice k of a step waits for slice k of its
  // dependency.
  int64_t needed_progress(const TbState& s, const Step& step, const TbState& dep) const {
    const int64_t slice = s.progress / s.num_steps;
    return slice * dep.num_steps + step.dep_step + 1;
  }

  Block blocked_on(const TbState& s) {
    const Step& step = current_step(s);
    if (step.dep_tb >= 0) {
      const TbState& dep = dependency(s, step);
      if (dep.progress < needed_progress(s, step, dep)) return Block::kDependency;
    }
    if (receives(step.type) && conns[s.in_conn].published == 0) return Block::kReceive;
    if (sends(step.type)) {
      const Connection& c = conns[s.out_conn];
      if (c.published + (c.reserved ? 1 : 0) >= options.fifo_slots) return Block::kSend;
    }
    return Block::kNone;
  }

  void enqueue(int t, bool front) {
    TbState& s = tbs[t];
    if (s.queued || s.running || s.progress >= s.total) return;
    s.queued = true;
    if (front) {
      ready.push_front(t);
    } else {
      ready.push_back(t);
    }
    cv.notify_one();
  }

  void fail(const std::string& message) {
    if (error.empty()) error = message;
    stop = true;
    cv.notify_all();
  }

  // Tries to claim the next step instance of threadblock t. Returns false when it must wait
  // (it is then registered to be woken) or when the program is broken (fail() was called).
  bool try_claim(int t, Claim& claim) {
    TbState& s = tbs[t];
    const Step& step = current_step(s);
    switch (blocked_on(s)) {
      case Block::kDependency: dependency(s, step).dep_waiters.push_back(t); return false;
      case Block::kReceive:  // woken when the sender publishes
      case Block::kSend:     // woken when the receiver frees a slot
        return false;
      case Block::kNone: break;
    }
    claim.instance = s.progress;
    if (receives(step.type)) {
      const Connection& c = conns[s.in_conn];
      claim.in_slot = c.head;
      const int got = c.msg_count[c.head];
      if (got != step.count) {
        const int slice = static_cast<int>(s.progress / s.num_steps);
        fail("count mismatch: " +
             step_name(s.rank, s.id, static_cast<int>(s.progress % s.num_steps)) + " (" +
             to_string(step.type) + ", slice " + std::to_string(slice) +
             ") receives cnt=" + std::to_string(step.count) + " but the matching send " +
             step_name(c.src, tbs[c.sender].id, c.msg_step[c.head]) +
             " sent cnt=" + std::to_string(got) + " on channel " + std::to_string(c.channel));
        return false;
      }
    }
    if (sends(step.type)) {
      Connection& c = conns[s.out_conn];
      claim.out_slot = (c.head + c.published) % options.fifo_slots;
      c.reserved = true;
    }
    return true;
  }

  void commit(int t, const Claim& claim) {
    TbState& s = tbs[t];
    const int step_index = static_cast<int>(claim.instance % s.num_steps);
    const Step& step = s.tb->steps[step_index];
    if (receives(step.type)) {
      Connection& c = conns[s.in_conn];
      c.head = (c.head + 1) % options.fifo_slots;
      --c.published;
      enqueue(c.sender, false);
    }
    if (sends(step.type)) {
      Connection& c = conns[s.out_conn];
      c.msg_count[claim.out_slot] = step.count;
      c.msg_step[claim.out_slot] = step_index;
      c.reserved = false;
      ++c.published;
      enqueue(c.receiver, false);
    }
    ++s.progress;
    ++step_instances;
    std::vector<int> waiters;
    waiters.swap(s.dep_waiters);
    for (int w : waiters) enqueue(w, false);
  }

  // What threadblock s waits for, one line of a failure message.
  std::string describe(TbState& s) {
    const Step& step = current_step(s);
    const int64_t slice = s.progress / s.num_steps;
    std::string out =
        waiting_step(s.rank, s.id, static_cast<int>(s.progress % s.num_steps), step.type, slice);
    if (s.running) {
      out += "is executing";
      return out;
    }
    switch (blocked_on(s)) {
      case Block::kDependency: {
        const TbState& dep = dependency(s, step);
        out += dependency_wait(s.rank, dep.id, step.dep_step, slice, dep.progress, dep.num_steps,
                               dep.total);
        break;
      }
      case Block::kReceive:
        out += "waits to receive from rank " + std::to_string(s.tb->recv_peer) + " on channel " +
               std::to_string(s.tb->channel) + " (no message in the FIFO)";
        break;
      case Block::kSend:
        out += "waits for a free FIFO slot to rank " + std::to_string(s.tb->send_peer) +
               " on channel " + std::to_string(s.tb->channel) + " (all " +
               std::to_string(options.fifo_slots) + " slots full)";
        break;
      case Block::kNone: out += "is ready to run"; break;
    }
    return out;
  }

  std::string describe_waiting() {
    return list_unfinished(
        tbs.size(), [&](size_t i) { return tbs[i].progress < tbs[i].total; },
        [&](size_t i) { return describe(tbs[i]); });
  }

  // ---- data movement (outside the lock) -----------------------------------------------------

  void execute(int t, const Claim& claim) {
    const TbState& s = tbs[t];
    const Step& step = s.tb->steps[static_cast<size_t>(claim.instance % s.num_steps)];
    const std::byte* in = nullptr;
    std::byte* out = nullptr;
    if (claim.in_slot >= 0) {
      const Connection& c = conns[s.in_conn];
      in = c.storage.data() + static_cast<size_t>(claim.in_slot) * c.slot_bytes;
    }
    if (claim.out_slot >= 0) {
      Connection& c = conns[s.out_conn];
      out = c.storage.data() + static_cast<size_t>(claim.out_slot) * c.slot_bytes;
    }
    execute_slice(step, claim.instance / s.num_steps, shape, options.dtype, options.op,
                  bases[s.rank], in, out);
  }

  // ---- the scheduler loop ---------------------------------------------------------------------

  // The scheduler loop of one worker for the current run; `lock` holds mu.
  void worker_loop(std::unique_lock<std::mutex>& lock) {
    while (!stop) {
      if (finished == tbs.size()) {
        stop = true;
        cv.notify_all();
        break;
      }
      if (Clock::now() >= deadline) {
        fail("timed out after " + std::to_string(options.timeout_s) + " s; " + describe_waiting());
        break;
      }
      if (ready.empty()) {
        if (running == 0) {
          // Nothing runs and nothing can run: every unfinished threadblock waits for an event
          // only another unfinished (hence waiting) threadblock could cause.
          fail("deadlock: no threadblock can progress; " + describe_waiting());
          break;
        }
        cv.wait_until(lock, deadline);
        continue;
      }
      const int t = ready.front();
      ready.pop_front();
      tbs[t].queued = false;
      Claim claim;
      if (!try_claim(t, claim)) continue;
      tbs[t].running = true;
      ++running;
      lock.unlock();
      const Clock::time_point began = options.record_timeline ? Clock::now() : Clock::time_point{};
      execute(t, claim);
      const Clock::time_point ended = options.record_timeline ? Clock::now() : Clock::time_point{};
      lock.lock();
      if (options.record_timeline) record(t, claim, began, ended);
      commit(t, claim);
      --running;
      tbs[t].running = false;
      if (tbs[t].progress >= tbs[t].total) {
        ++finished;
        if (finished == tbs.size()) cv.notify_all();
      } else {
        enqueue(t, true);  // keep going with the same threadblock while it can
      }
      if (ready.empty() && running == 0) cv.notify_all();  // let a waiter detect the deadlock
    }
  }

  // Appends the step instance `claim` of threadblock t to the timeline; `lock` holds mu.
  void record(int t, const Claim& claim, Clock::time_point began, Clock::time_point ended) {
    const TbState& s = tbs[t];
    const auto since_start = [&](Clock::time_point at) {
      return std::chrono::duration<double, std::micro>(at - run_start).count();
    };
    timeline.push_back({s.rank, s.id, static_cast<int>(claim.instance % s.num_steps),
                        claim.instance / s.num_steps, since_start(began), since_start(ended)});
  }

  // ---- one run ------------------------------------------------------------------------------

  void prepare_run(const std::vector<RankBuffers>& buffers, int64_t elems,
                   const ExecOptions& opts) {
    const int num_ranks = program.num_ranks;
    if (static_cast<int>(buffers.size()) != num_ranks) {
      throw UserError(program.name, "buffers",
                      "got " + std::to_string(buffers.size()) + " rank buffers for " +
                          std::to_string(num_ranks) + " ranks");
    }
    if (elems < 0) throw UserError(program.name, "chunk_elems", "negative chunk size");
    if (opts.fifo_slots < 1) throw UserError(program.name, "fifo_slots", "must be at least 1");
    options = opts;
    shape = slice_shape(program.protocol, elems, opts.dtype, opts);
    double scratch_total = 0.0;
    for (const GpuProgram& gpu : program.gpus) {
      scratch_total += static_cast<double>(gpu.scratch_chunks) * elems * shape.elem_bytes;
    }
    require_memory(scratch_total, program.name, "scratch");
    bases.assign(num_ranks, {nullptr, nullptr, nullptr});
    for (int r = 0; r < num_ranks; ++r) {
      const GpuProgram& gpu = program.gpus[r];
      if ((gpu.input_chunks > 0 && buffers[r].input == nullptr) ||
          (gpu.output_chunks > 0 && buffers[r].output == nullptr)) {
        throw UserError(program.name, "buffers",
                        "rank " + std::to_string(r) + " has no input or output buffer");
      }
      const size_t scratch_bytes =
          static_cast<size_t>(gpu.scratch_chunks) * elems * shape.elem_bytes;
      if (scratch[r].size() < scratch_bytes) scratch[r].resize(scratch_bytes);
      bases[r] = {static_cast<std::byte*>(buffers[r].input),
                  static_cast<std::byte*>(buffers[r].output), scratch[r].data()};
    }
    double fifo_bytes = 0.0;
    for (const Connection& c : conns) {
      fifo_bytes +=
          static_cast<double>(c.max_count) * shape.slice_elems * shape.elem_bytes * opts.fifo_slots;
    }
    require_memory(fifo_bytes, program.name, "fifo_slots");
    for (Connection& c : conns) {
      c.slot_bytes = static_cast<size_t>(c.max_count) * shape.slice_elems * shape.elem_bytes;
      const size_t total = c.slot_bytes * opts.fifo_slots;
      if (c.storage.size() < total) c.storage.resize(total);
      c.msg_count.assign(opts.fifo_slots, 0);
      c.msg_step.assign(opts.fifo_slots, -1);
      c.head = 0;
      c.published = 0;
      c.reserved = false;
    }
    ready.clear();
    finished = 0;
    running = 0;
    stop = false;
    error.clear();
    step_instances = 0;
    timeline.clear();
    for (size_t t = 0; t < tbs.size(); ++t) {
      TbState& s = tbs[t];
      s.progress = 0;
      s.total = static_cast<int64_t>(s.num_steps) * shape.slices;
      s.queued = false;
      s.running = false;
      s.dep_waiters.clear();
      if (s.total == 0) {
        ++finished;
      } else {
        s.queued = true;
        ready.push_back(static_cast<int>(t));
      }
    }
  }

  std::string leftover_messages() const {
    for (const Connection& c : conns) {
      if (c.published > 0) {
        return "rank " + std::to_string(c.src) + " tb " + std::to_string(tbs[c.sender].id) +
               " sent " + std::to_string(c.published) + " message(s) to rank " +
               std::to_string(c.dst) + " on channel " + std::to_string(c.channel) +
               " that no step received";
      }
    }
    return "";
  }

  ExecResult run(const std::vector<RankBuffers>& buffers, int64_t elems, const ExecOptions& opts) {
    std::unique_lock<std::mutex> lock(mu);
    prepare_run(buffers, elems, opts);
    int workers = opts.workers;
    if (workers <= 0) {
      workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      workers = std::min(workers, 8);
    }
    workers =
        std::max(1, std::min<int>(workers, static_cast<int>(std::max<size_t>(1, tbs.size()))));
    const Clock::time_point start = Clock::now();
    run_start = start;
    // Clamped: a limit of 1e10 s would overflow the clock's nanoseconds (and a year is
    // no limit in practice).
    constexpr double kLongestTimeoutS = 365.0 * 24 * 3600;
    deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                           std::clamp(opts.timeout_s, 0.0, kLongestTimeoutS)));
    while (static_cast<int>(pool.size()) < workers - 1) {
      const int index = static_cast<int>(pool.size());
      pool.emplace_back([this, index] { pool_main(index); });
    }
    pool_wanted = workers - 1;
    ++generation;
    pool_cv.notify_all();
    ++in_loop;
    worker_loop(lock);
    --in_loop;
    // Wait for the pool threads that joined this run (none is executing a step any more once
    // they leave the loop); threads that have not woken up yet will not join.
    cv.wait(lock, [&] { return in_loop == 0; });
    const Clock::time_point end = Clock::now();
    ExecResult result;
    result.time_us = std::chrono::duration<double, std::micro>(end - start).count();
    result.slices = shape.slices;
    result.chunk_elems = shape.chunk_elems;
    result.step_instances = step_instances;
    result.workers = workers;
    result.timeline = std::move(timeline);
    if (error.empty()) error = leftover_messages();
    result.ok = error.empty();
    result.error = error;
    return result;
  }
};

CpuExecutor::CpuExecutor(Program program) : impl_(std::make_unique<Impl>(std::move(program))) {}
CpuExecutor::~CpuExecutor() = default;
CpuExecutor::CpuExecutor(CpuExecutor&&) noexcept = default;
CpuExecutor& CpuExecutor::operator=(CpuExecutor&&) noexcept = default;

const Program& CpuExecutor::program() const { return impl_->program; }

void CpuExecutor::validate(const Program& program) { Impl checked(program); }

ExecResult CpuExecutor::run(const std::vector<RankBuffers>& buffers, int64_t chunk_elems,
                            const ExecOptions& options) {
  return impl_->run(buffers, chunk_elems, options);
}

void require_memory(double bytes, const std::string& owner, const std::string& field) {
  const double physical =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  if (physical <= 0.0 || bytes <= physical) return;
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  char text[128];
  std::snprintf(text, sizeof text,
                "needs about %.1f GiB of memory, more than this machine's %.1f GiB", bytes / kGiB,
                physical / kGiB);
  throw UserError(owner, field, text);
}

}  // namespace ccsynth::runtime
