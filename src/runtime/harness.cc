#include "ccsynth/runtime/harness.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <optional>
#include <vector>

#include "ccsynth/core/error.h"
#include "ccsynth/runtime/kernels.h"

namespace ccsynth::runtime {

namespace {

using Bytes = std::vector<std::byte>;

// splitmix64: a small, good generator for reproducible test data.
struct Random {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
};

double load(DataType type, const std::byte* p) {
  switch (type) {
    case DataType::kFloat32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DataType::kFloat64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case DataType::kFloat16:
    case DataType::kBFloat16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return type == DataType::kFloat16 ? half_to_float(v) : bfloat16_to_float(v);
    }
    case DataType::kInt32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DataType::kInt64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<double>(v);
    }
    case DataType::kUInt8: return static_cast<double>(static_cast<uint8_t>(*p));
  }
  return 0.0;
}

void store_float(DataType type, std::byte* p, double value) {
  switch (type) {
    case DataType::kFloat32: {
      const float v = static_cast<float>(value);
      std::memcpy(p, &v, 4);
      return;
    }
    case DataType::kFloat64: std::memcpy(p, &value, 8); return;
    case DataType::kFloat16: {
      const uint16_t v = float_to_half(static_cast<float>(value));
      std::memcpy(p, &v, 2);
      return;
    }
    case DataType::kBFloat16: {
      const uint16_t v = float_to_bfloat16(static_cast<float>(value));
      std::memcpy(p, &v, 2);
      return;
    }
    default: return;
  }
}

// Unit roundoff 2^-p of a floating type (p = significand bits incl. the hidden one).
double unit_roundoff(DataType type) {
  switch (type) {
    case DataType::kFloat32: return 0x1.0p-24;
    case DataType::kFloat64: return 0x1.0p-53;
    case DataType::kFloat16: return 0x1.0p-11;
    case DataType::kBFloat16: return 0x1.0p-8;
    default: return 0.0;
  }
}

// Random input elements. Floats: sums get [-1, 1), products +-[0.95, 1.05) so that products of
// many ranks stay in range even for float16, min/max [-100, 100). Integers: random bits (sums
// and products wrap, exactly and order-independently).
void fill_random(DataType type, ReduceOp op, std::byte* p, int64_t n, Random& rng) {
  const size_t e = size_of(type);
  for (int64_t i = 0; i < n; ++i, p += e) {
    if (is_floating(type)) {
      const double u = rng.uniform();
      double v = 0.0;
      if (op == ReduceOp::kSum) {
        v = 2.0 * u - 1.0;
      } else if (op == ReduceOp::kProd) {
        v = (rng.next() & 1 ? -1.0 : 1.0) * (0.95 + 0.1 * u);
      } else {
        v = 200.0 * u - 100.0;
      }
      store_float(type, p, v);
    } else {
      const uint64_t bits = rng.next();
      std::memcpy(p, &bits, e);  // little-endian: the low bytes
    }
  }
}

struct Layout {
  std::optional<Collective> collective;
  int input_chunks = 0;  // of the collective (or inferred)
  int output_chunks = 0;
  int64_t chunk_elems = 0;
  size_t chunk_bytes = 0;
  std::vector<Bytes> storage;  // per rank: send and recv (out-of-place) or one buffer
  std::vector<std::byte*> send;
  std::vector<std::byte*> recv;
  std::vector<RankBuffers> views;  // one per rank; null pointers for ranks not local
  std::vector<bool> local;         // per rank: its buffers live in this process
};

std::optional<Collective> resolve_collective(const Program& program,
                                             const HarnessOptions& options) {
  if (options.collective != nullptr) return *options.collective;
  try {
    return collective_of(program);
  } catch (const UserError& e) {
    if (options.check) {
      throw UserError(program.name, "collective",
                      "cannot check this program: " + std::string(e.what()) +
                          " (pass the collective it implements)");
    }
    return std::nullopt;
  }
}

// The sizes a program's gpus use (for custom programs run without a collective).
void program_chunks(const Program& program, int& input, int& output) {
  input = 0;
  output = 0;
  for (const GpuProgram& gpu : program.gpus) {
    input = std::max(input, gpu.input_chunks);
    output = std::max(output, gpu.output_chunks);
  }
}

Layout make_layout(const Program& program, int64_t bytes, const HarnessOptions& options,
                   const std::vector<int>& local_ranks) {
  Layout layout;
  layout.collective = resolve_collective(program, options);
  int gpu_in = 0;
  int gpu_out = 0;
  program_chunks(program, gpu_in, gpu_out);
  if (layout.collective) {
    if (layout.collective->num_ranks != program.num_ranks) {
      throw UserError(program.name, "collective",
                      "the collective has " + std::to_string(layout.collective->num_ranks) +
                          " ranks, the program " + std::to_string(program.num_ranks));
    }
    layout.input_chunks = layout.collective->input_chunks;
    layout.output_chunks = layout.collective->output_chunks;
  } else {
    if (options.inplace) {
      throw UserError(program.name, "inplace",
                      "in-place runs need the collective of a custom program");
    }
    layout.input_chunks = std::max(1, gpu_in);
    layout.output_chunks = gpu_out;
  }
  if (options.inplace && !program.inplace) {
    throw UserError(program.name, "inplace", "the program is not in-place (inplace=0)");
  }
  if (!options.inplace && !program.outofplace) {
    throw UserError(program.name, "inplace",
                    "the program only supports in-place calls (outofplace=0): run it in-place");
  }
  layout.chunk_elems = chunk_elements(bytes, layout.input_chunks, options.exec.dtype);
  layout.chunk_bytes = static_cast<size_t>(layout.chunk_elems) * size_of(options.exec.dtype);
  const int num_ranks = program.num_ranks;
  layout.local.assign(num_ranks, local_ranks.empty());
  for (int r : local_ranks) {
    if (r < 0 || r >= num_ranks) {
      throw UserError(
          program.name, "ranks",
          "rank " + std::to_string(r) + " is not a rank of 0.." + std::to_string(num_ranks - 1));
    }
    layout.local[r] = true;
  }
  // Buffers of every rank, plus the checker's inputs and expected outputs when checking.
  const double buffer_chunks =
      std::max(layout.input_chunks, gpu_in) + std::max(layout.output_chunks, gpu_out);
  require_memory(
      buffer_chunks * static_cast<double>(layout.chunk_bytes) * num_ranks * (options.check ? 2 : 1),
      program.name, "bytes");
  layout.storage.resize(num_ranks * (options.inplace ? 1 : 2));
  layout.send.resize(num_ranks);
  layout.recv.resize(num_ranks);
  for (int r = 0; r < num_ranks; ++r) {
    if (!layout.local[r]) {
      layout.views.push_back(RankBuffers{});
      continue;
    }
    if (options.inplace) {
      // NCCL in-place layout: the smaller buffer lives inside the larger one.
      const BufferRef in0 = input_location(*layout.collective, Slot{r, 0}, true);
      const BufferRef out0 = output_location(*layout.collective, Slot{r, 0}, true);
      const int in_off = in0.buffer == Buffer::kOutput ? in0.index : 0;
      const int out_off = out0.buffer == Buffer::kInput ? out0.index : 0;
      const int chunks =
          std::max({layout.input_chunks, layout.output_chunks, in_off + gpu_in, out_off + gpu_out});
      layout.storage[r].resize(chunks * layout.chunk_bytes);
      layout.send[r] = layout.storage[r].data() + in_off * layout.chunk_bytes;
      layout.recv[r] = layout.storage[r].data() + out_off * layout.chunk_bytes;
    } else {
      layout.storage[2 * r].resize(std::max(layout.input_chunks, gpu_in) * layout.chunk_bytes);
      layout.storage[2 * r + 1].resize(std::max(layout.output_chunks, gpu_out) *
                                       layout.chunk_bytes);
      layout.send[r] = layout.storage[2 * r].data();
      layout.recv[r] = layout.storage[2 * r + 1].data();
    }
    layout.views.push_back(RankBuffers{layout.send[r], layout.recv[r]});
  }
  return layout;
}

// The comparison of the outputs with the reference.
class Checker {
 public:
  Checker(const Collective& collective, Layout& layout, const ExecOptions& exec, bool inplace,
          uint64_t seed)
      : c_(collective), layout_(layout), exec_(exec), inplace_(inplace), seed_(seed) {}

  // Random inputs in every input slot, a copy of them for the reference, and a NaN / all-ones
  // pattern in every output so unwritten outputs are caught.
  // Only the local ranks' buffers are filled; every rank's inputs are the same in every
  // process (seeded by rank), so a process can compute the reference of its ranks alone.
  void fill() {
    for (int r = 0; r < c_.num_ranks; ++r) {
      if (!layout_.local[r]) continue;
      Bytes& out = layout_.storage[inplace_ ? r : 2 * r + 1];
      std::memset(out.data(), 0xff, out.size());
      const Bytes& in = input(r);
      std::memcpy(layout_.send[r], in.data(), in.size());
    }
  }

  void compare(HarnessResult& result) {
    result.checked = true;
    std::vector<const std::byte*> contributions;
    Bytes folded(layout_.chunk_bytes);
    for (int k = 0; k < c_.num_chunks(); ++k) {
      const ChunkSpec& spec = c_.chunks[k];
      contributions.clear();
      for (const Slot& s : spec.pre) {
        contributions.push_back(input(s.rank).data() + s.index * layout_.chunk_bytes);
      }
      if (contributions.empty() || !has_local_post(spec)) continue;
      const bool exact = !c_.combining || contributions.size() == 1 || !is_floating(exec_.dtype);
      if (exact) fold_exact(contributions, folded);
      for (const Slot& s : spec.post) {
        if (!layout_.local[s.rank]) continue;
        const BufferRef ref = output_location(c_, s, inplace_);
        const std::byte* got =
            (ref.buffer == Buffer::kInput ? layout_.send[s.rank] : layout_.recv[s.rank]) +
            ref.index * layout_.chunk_bytes;
        if (exact) {
          compare_exact(k, s, got, folded.data(), result);
        } else {
          compare_float(k, s, got, contributions, result);
        }
      }
    }
    if (result.mismatches > 0) {
      result.ok = false;
      result.message = "check failed: " + std::to_string(result.mismatches) + " of " +
                       std::to_string(result.checked_elements) + " output elements wrong" +
                       details_;
    }
  }

 private:
  // The seeded inputs of rank r (its input chunks), made on first use.
  const Bytes& input(int r) {
    if (inputs_.empty()) inputs_.resize(c_.num_ranks);
    Bytes& in = inputs_[r];
    if (in.empty()) {
      Random rng{seed_ * 0x100000001b3ull + static_cast<uint64_t>(r)};
      in.resize(c_.input_chunks * layout_.chunk_bytes);
      fill_random(exec_.dtype, exec_.op, in.data(), c_.input_chunks * layout_.chunk_elems, rng);
    }
    return in;
  }

  bool has_local_post(const ChunkSpec& spec) const {
    for (const Slot& s : spec.post) {
      if (layout_.local[s.rank]) return true;
    }
    return false;
  }

  void fold_exact(const std::vector<const std::byte*>& contributions, Bytes& out) const {
    std::memcpy(out.data(), contributions[0], layout_.chunk_bytes);
    for (size_t i = 1; i < contributions.size(); ++i) {
      reduce_elements(exec_.dtype, exec_.op, out.data(), out.data(), contributions[i],
                      layout_.chunk_elems);
    }
  }

  void report(int chunk, const Slot& slot, int64_t element, double expected, double got,
              double tolerance, HarnessResult& result) {
    ++result.mismatches;
    if (result.mismatches > 5) return;
    details_ += "\n  chunk " + std::to_string(chunk) + " at rank " + std::to_string(slot.rank) +
                " output[" + std::to_string(slot.index) + "] element " + std::to_string(element) +
                ": expected " + std::to_string(expected) + ", got " + std::to_string(got);
    if (tolerance > 0) details_ += " (tolerance " + std::to_string(tolerance) + ")";
  }

  void compare_exact(int chunk, const Slot& slot, const std::byte* got, const std::byte* want,
                     HarnessResult& result) {
    const size_t e = size_of(exec_.dtype);
    for (int64_t i = 0; i < layout_.chunk_elems; ++i) {
      ++result.checked_elements;
      if (std::memcmp(got + i * e, want + i * e, e) != 0) {
        report(chunk, slot, i, load(exec_.dtype, want + i * e), load(exec_.dtype, got + i * e), 0,
               result);
      }
    }
  }

  // Floating-point reductions: the runtime reduces in another order than the reference and
  // rounds after every operation, so |got - exact| may reach about (n - 1) u S for n
  // contributions, unit roundoff u and S = sum of |x| (products: |product|) (Higham, Accuracy
  // and Stability of Numerical Algorithms, sec. 4.2); we allow 2 (n + 1) u S.
  void compare_float(int chunk, const Slot& slot, const std::byte* got,
                     const std::vector<const std::byte*>& contributions, HarnessResult& result) {
    const size_t e = size_of(exec_.dtype);
    const double u = unit_roundoff(exec_.dtype);
    const double n = static_cast<double>(contributions.size());
    for (int64_t i = 0; i < layout_.chunk_elems; ++i) {
      ++result.checked_elements;
      double expected = load(exec_.dtype, contributions[0] + i * e);
      double magnitude = std::fabs(expected);
      for (size_t j = 1; j < contributions.size(); ++j) {
        const double x = load(exec_.dtype, contributions[j] + i * e);
        switch (exec_.op) {
          case ReduceOp::kSum:
            expected += x;
            magnitude += std::fabs(x);
            break;
          case ReduceOp::kProd:
            expected *= x;
            magnitude = std::fabs(expected);
            break;
          case ReduceOp::kMin: expected = std::min(expected, x); break;
          case ReduceOp::kMax: expected = std::max(expected, x); break;
        }
      }
      const bool selects = exec_.op == ReduceOp::kMin || exec_.op == ReduceOp::kMax;
      const double tolerance = selects ? 0.0 : 2.0 * (n + 1.0) * u * magnitude;
      const double value = load(exec_.dtype, got + i * e);
      const double error = std::fabs(value - expected);
      if (!(error <= tolerance)) {  // also catches NaN
        report(chunk, slot, i, expected, value, tolerance, result);
      } else {
        result.max_error = std::max(result.max_error, error);
      }
    }
  }

  const Collective& c_;
  Layout& layout_;
  const ExecOptions& exec_;
  bool inplace_;
  uint64_t seed_;
  std::vector<Bytes> inputs_;  // per rank, the collective's input chunks (empty until used)
  std::string details_;
};

}  // namespace

int64_t chunk_elements(int64_t bytes, int input_chunks, DataType dtype, const std::string& field) {
  const int64_t unit = static_cast<int64_t>(input_chunks) * static_cast<int64_t>(size_of(dtype));
  if (bytes <= 0 || unit <= 0 || bytes % unit != 0) {
    throw UserError("", field,
                    std::to_string(bytes) + " bytes per rank cannot be split into " +
                        std::to_string(input_chunks) + " chunks of whole " + to_string(dtype) +
                        " elements: use a positive multiple of " + std::to_string(unit));
  }
  return bytes / unit;
}

HarnessResult run_program(const Program& program, int64_t bytes, const HarnessOptions& options) {
  CpuExecutor executor(program);
  return run_program(executor, bytes, options);
}

struct RunBuffers::Impl {
  Layout layout;
  HarnessOptions options;
  std::unique_ptr<Checker> checker;
};

RunBuffers::RunBuffers(const Program& program, int64_t bytes, const HarnessOptions& options,
                       const std::vector<int>& local_ranks)
    : impl_(std::make_unique<Impl>()) {
  impl_->layout = make_layout(program, bytes, options, local_ranks);
  impl_->options = options;
}

RunBuffers::~RunBuffers() = default;
RunBuffers::RunBuffers(RunBuffers&&) noexcept = default;
RunBuffers& RunBuffers::operator=(RunBuffers&&) noexcept = default;

const std::vector<RankBuffers>& RunBuffers::views() const { return impl_->layout.views; }

int64_t RunBuffers::chunk_elems() const { return impl_->layout.chunk_elems; }

void RunBuffers::fill_check_inputs() {
  Impl& d = *impl_;
  if (!d.layout.collective) {
    throw UserError("", "collective", "cannot check a program without its collective");
  }
  d.checker = std::make_unique<Checker>(*d.layout.collective, d.layout, d.options.exec,
                                        d.options.inplace, d.options.seed);
  d.checker->fill();
}

void RunBuffers::check_outputs(HarnessResult& result) {
  if (!impl_->checker) throw UserError("", "check", "fill_check_inputs was not called");
  impl_->checker->compare(result);
}

HarnessResult run_iterations(RunBuffers& buffers, int64_t bytes, const HarnessOptions& options,
                             const RunOnce& run_once, const AfterCheck& after_check) {
  if (options.iters < 0 || options.warmup < 0) {
    throw UserError("", "iters", "iteration counts must not be negative");
  }
  HarnessResult result;
  result.bytes = bytes;
  result.chunk_elems = buffers.chunk_elems();
  auto run = [&]() {
    ExecResult r = run_once();
    result.slices = r.slices;
    result.workers = r.workers;
    if (options.exec.record_timeline) result.timeline = r.timeline;
    if (!r.ok) {
      result.ok = false;
      result.message = r.error;
    }
    return r;
  };
  if (options.check) {
    buffers.fill_check_inputs();
    run();
    if (!result.ok) return result;
    buffers.check_outputs(result);
    if (after_check) after_check(result);
    if (!result.ok) return result;
  }
  for (int i = 0; i < options.warmup && result.ok; ++i) run();
  double total = 0.0;
  for (int i = 0; i < options.iters && result.ok; ++i) {
    const double t = run().time_us;
    total += t;
    result.min_time_us = i == 0 ? t : std::min(result.min_time_us, t);
  }
  if (options.iters > 0) result.time_us = total / options.iters;
  return result;
}

HarnessResult run_program(CpuExecutor& executor, int64_t bytes, const HarnessOptions& options) {
  if (options.iters < 0 || options.warmup < 0) {
    throw UserError("", "iters", "iteration counts must not be negative");
  }
  RunBuffers buffers(executor.program(), bytes, options);
  return run_iterations(buffers, bytes, options, [&] {
    return executor.run(buffers.views(), buffers.chunk_elems(), options.exec);
  });
}

double measure_memcpy_gbps(int64_t bytes, int iters) {
  if (bytes <= 0 || iters <= 0) throw UserError("", "memcpy", "bytes and iters must be positive");
  require_memory(2.0 * static_cast<double>(bytes), "", "memcpy");
  Bytes a(static_cast<size_t>(bytes), std::byte{1});
  Bytes b(static_cast<size_t>(bytes), std::byte{2});
  std::memcpy(b.data(), a.data(), a.size());
  double best = 0.0;
  for (int i = 0; i < iters; ++i) {
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(i % 2 ? a.data() : b.data(), i % 2 ? b.data() : a.data(), a.size());
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (s > 0) best = std::max(best, static_cast<double>(bytes) / s / 1e9);
  }
  return best;
}

}  // namespace ccsynth::runtime
