// `ccsynth run FILE.xml --size S`: executes an MSCCL-IR program on the CPU runtime (all ranks
// in this process, docs/runtime.md), optionally checks its outputs against the collective's
// reference, and reports time, algbw and busbw (nccl-tests conventions). `--memcpy` measures
// this machine's memcpy bandwidth (alone or next to a program run).

#include <fmt/format.h>

#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/formats/collective_json.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/plan/trace.h"
#include "ccsynth/runtime/harness.h"
#include "ccsynth/sim/simulate.h"
#include "ccsynth/verify/verify_program.h"
#include "cli/command.h"
#include "cli/run_common.h"

namespace ccsynth::cli {

std::optional<Collective> collective_for(const Program& program, const RunOptions& o) {
  if (!o.collective.empty()) {
    return formats::resolve_collective(o.collective, program.num_ranks, 1, program.root);
  }
  try {
    return verify::collective_of(program);
  } catch (const UserError& e) {
    if (o.check || o.inplace) {
      throw UserError(e.file(), "--collective",
                      e.reason() + " (pass --collective NAME|FILE.json for custom programs)");
    }
    return std::nullopt;  // runs with buffers sized from the program, unchecked
  }
}

runtime::HarnessOptions harness_options(const RunOptions& o) {
  runtime::HarnessOptions h;
  h.exec.dtype = runtime::parse_data_type(o.dtype, "--dtype");
  h.exec.op = runtime::parse_reduce_op(o.op, "--op");
  h.exec.slices = o.slices;
  h.exec.slice_bytes = parse_bytes(o.slice_bytes, "--slice-bytes");
  h.exec.fifo_slots = o.fifo_slots;
  h.exec.workers = o.workers;
  h.exec.timeout_s = o.timeout_s;
  h.exec.record_timeline = !o.trace.empty();
  h.inplace = o.inplace;
  h.check = o.check;
  h.iters = o.iters;
  h.warmup = o.warmup;
  h.seed = o.seed;
  return h;
}

void set_bandwidths(Outcome& out, const Program& program,
                    const std::optional<Collective>& collective) {
  const CollectiveKind kind = collective ? collective->kind : CollectiveKind::kCustom;
  if (out.result.ok && out.result.time_us > 0.0) {
    // nccl-tests: algbw = size / time with size = output for (all)gather, else input.
    out.algbw_gbps = sim::nccl_size_bytes(kind, program.num_ranks, out.result.bytes) /
                     (out.result.time_us * 1e3);
    out.busbw_gbps = out.algbw_gbps * sim::bus_factor(kind, program.num_ranks);
  }
}

runtime::HarnessResult with_size_flag(const RunOptions& o,
                                      const std::function<runtime::HarnessResult()>& run) {
  try {
    return run();
  } catch (const UserError& e) {
    throw in_user_terms(
        e, "", o.file,
        {{"bytes", "--size"}, {"scratch", "--size"}, {"fifo_slots", "--fifo-slots"}});
  }
}

namespace {

Outcome run_file(const RunOptions& o, const Program& program) {
  runtime::HarnessOptions h = harness_options(o);
  const std::optional<Collective> collective = collective_for(program, o);
  if (collective) h.collective = &*collective;
  const int64_t bytes = parse_bytes(o.bytes, "--size");
  Outcome out;
  out.collective = collective.value_or(Collective{});
  out.result = with_size_flag(o, [&] { return runtime::run_program(program, bytes, h); });
  set_bandwidths(out, program, collective);
  return out;
}

}  // namespace

nlohmann::json to_json(const RunOptions& o, const Program* program, const Outcome* out,
                       std::optional<double> memcpy_gbps) {
  nlohmann::json j = {{"format", "ccsynth-run"}, {"version", 1}};
  if (program != nullptr && out != nullptr) {
    const runtime::HarnessResult& r = out->result;
    j["program"] = program->name;
    j["file"] = o.file;
    j["collective"] =
        out->collective.name.empty() ? to_string(program->collective) : out->collective.name;
    j["ranks"] = program->num_ranks;
    j["protocol"] = to_string(program->protocol);
    j["bytes"] = r.bytes;
    j["dtype"] = o.dtype;
    j["op"] = o.op;
    j["inplace"] = o.inplace;
    j["iters"] = o.iters;
    j["warmup"] = o.warmup;
    j["time_us"] = r.time_us;
    j["min_time_us"] = r.min_time_us;
    j["algbw_gbps"] = out->algbw_gbps;
    j["busbw_gbps"] = out->busbw_gbps;
    j["ok"] = r.ok;
    j["checked"] = r.checked;
    j["checked_elements"] = r.checked_elements;
    j["mismatches"] = r.mismatches;
    j["max_error"] = r.max_error;
    j["slices"] = r.slices;
    j["chunk_elems"] = r.chunk_elems;
    j["workers"] = r.workers;
    j["message"] = r.message;
  } else {
    j["ok"] = true;
  }
  if (memcpy_gbps) j["memcpy_gbps"] = *memcpy_gbps;
  return j;
}

void print_table(const RunOptions& o, const Program& program, const Outcome& out) {
  const runtime::HarnessResult& r = out.result;
  std::cout << fmt::format("program {} ({}, {}, {} ranks), {} per rank, {} {}{}\n", program.name,
                           to_string(program.collective), to_string(program.protocol),
                           program.num_ranks, format_bytes(r.bytes), o.dtype, o.op,
                           o.inplace ? ", in-place" : "");
  std::cout << fmt::format("{:>10} {:>8} {:>14} {:>14} {:>11} {:>11} {:>7} {:>8}\n", "bytes",
                           "iters", "time_us", "min_us", "algbw_GB/s", "busbw_GB/s", "slices",
                           "workers");
  std::cout << fmt::format("{:>10} {:>8} {:>14.3f} {:>14.3f} {:>11.3f} {:>11.3f} {:>7} {:>8}\n",
                           format_bytes(r.bytes), o.iters, r.time_us, r.min_time_us, out.algbw_gbps,
                           out.busbw_gbps, r.slices, r.workers);
  if (r.checked) {
    std::cout << fmt::format("check: {} ({} elements compared, {} wrong, max float error {:g})\n",
                             r.ok ? "ok" : "FAILED", r.checked_elements, r.mismatches, r.max_error);
  }
  if (!r.ok) std::cout << "error: " << r.message << "\n";
}

#ifndef CCSYNTH_HAVE_MPI
int run_mpi_command(const RunOptions& o, const Program&) {
  throw UserError(o.file, "--mpi",
                  "this ccsynth was built without the MPI runtime (install libopenmpi-dev and "
                  "configure with -DCCSYNTH_WITH_MPI=ON)");
}
#endif

namespace {
plan::Table csv_table(const RunOptions& o, const Outcome& out) {
  const runtime::HarnessResult& r = out.result;
  plan::Table table{{"bytes", "iters", "time_us", "min_time_us", "algbw_gbps", "busbw_gbps",
                     "slices", "workers", "ok", "checked", "mismatches"},
                    {}};
  table.add(r.bytes, o.iters, r.time_us, r.min_time_us, out.algbw_gbps, out.busbw_gbps, r.slices,
            r.workers, r.ok, r.checked, r.mismatches);
  return table;
}

int run_command(const RunOptions& o) {
  if (o.file.empty() && !o.memcpy) {
    throw UserError("", "file", "give an MSCCL-IR XML file to run (or --memcpy)");
  }
  std::optional<double> memcpy_gbps;
  if (o.memcpy) {
    try {
      memcpy_gbps = runtime::measure_memcpy_gbps(parse_bytes(o.memcpy_bytes, "--memcpy-bytes"), 10);
    } catch (const UserError& e) {
      throw in_user_terms(e, "", "", {{"memcpy", "--memcpy-bytes"}});
    }
  }
  if (o.file.empty()) {
    if (o.json) {
      std::cout << to_json(o, nullptr, nullptr, memcpy_gbps).dump(2) << "\n";
    } else {
      std::cout << fmt::format("memcpy bandwidth: {:.3f} GB/s ({} copies, best of 10)\n",
                               *memcpy_gbps, format_bytes(parse_bytes(o.memcpy_bytes)));
    }
    return kExitOk;
  }
  const Program program = formats::read_msccl_xml_file(o.file);
  validate_structure(program, o.file);
  if (o.mpi) return run_mpi_command(o, program);
  const Outcome out = run_file(o, program);
  if (!o.trace.empty() && !out.result.timeline.empty()) {
    write_text_file(o.trace, plan::trace_json(out.result.timeline, program).dump());
  }
  if (o.json) {
    std::cout << to_json(o, &program, &out, memcpy_gbps).dump(2) << "\n";
  } else if (o.csv) {
    print_csv(csv_table(o, out));
  } else {
    print_table(o, program, out);
    if (memcpy_gbps) std::cout << fmt::format("memcpy bandwidth: {:.3f} GB/s\n", *memcpy_gbps);
  }
  return out.result.ok ? kExitOk : kExitCheckFailed;
}

}  // namespace

void add_run_command(CLI::App& app, CommandResult& result) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run an MSCCL-IR XML program on the CPU runtime (all ranks in this process) and "
      "report time, algbw and busbw; --check compares with the collective's reference");
  cmd->add_option("file", o->file, "MSCCL-IR XML program (classic or executor dialect)");
  cmd->add_option("-s,--size,--bytes", o->bytes,
                  "Per-rank input bytes (1K, 64M, ...); must be a multiple of the program's "
                  "input chunks times the element size")
      ->capture_default_str();
  cmd->add_option("--dtype", o->dtype, "float32|float64|float16|bfloat16|int32|int64|uint8")
      ->capture_default_str();
  cmd->add_option("--op", o->op, "Reduction: sum|prod|min|max")->capture_default_str();
  cmd->add_option("-c,--collective", o->collective,
                  "Collective of a custom program (built-in name or collective JSON file); "
                  "built-in programs imply theirs");
  cmd->add_option("--iters", o->iters, "Timed runs")->capture_default_str()->check(kNonNegative);
  cmd->add_option("--warmup", o->warmup, "Untimed runs before the timed ones")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_flag("--check", o->check,
                "Run once on random inputs and compare with the reference (exact for integers, "
                "ulp-based tolerance for floats); exit 1 when wrong");
  cmd->add_flag("--inplace", o->inplace, "In-place call (NCCL buffer layout)");
  cmd->add_flag("--json", o->json, "Print one ccsynth-run JSON document");
  add_csv_flag(cmd, o->csv, "run");
  cmd->add_option("--slices", o->slices, "Exactly this many slices per chunk (0 = by protocol)")
      ->check(kNonNegative);
  cmd->add_option("--slice-bytes", o->slice_bytes,
                  "Largest slice in bytes (0 = NCCL slot size of the protocol: Simple 512K, "
                  "LL128 562.5K, LL 32K)")
      ->capture_default_str();
  cmd->add_option("--fifo-slots", o->fifo_slots, "Slots per connection FIFO")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--workers", o->workers, "Worker threads (0 = hardware threads, at most 8)")
      ->check(kNonNegative);
  cmd->add_option("--timeout", o->timeout_s, "Wall-clock limit of one run in seconds")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_option("--seed", o->seed, "Seed of the random inputs")->capture_default_str();
  cmd->add_flag("--mpi", o->mpi,
                "Run on the MPI runtime: start with `mpirun -np N ccsynth run FILE --mpi`; the "
                "program's ranks are spread over the N processes (docs/mpi.md)");
  cmd->add_option("--trace", o->trace,
                  "Write the last run's steps and messages as Chrome trace-event JSON "
                  "(wall-clock; Perfetto, chrome://tracing; docs/formats.md)");
  cmd->add_flag("--memcpy", o->memcpy, "Also measure this machine's memcpy bandwidth");
  cmd->add_option("--memcpy-bytes", o->memcpy_bytes, "Buffer size of the memcpy measurement")
      ->capture_default_str();
  cmd->footer(
      "Sizes are per-rank input bytes; algbw/busbw follow nccl-tests (docs/runtime.md).\n"
      "Exit codes: 0 ok, 1 check failed or the program deadlocked / timed out (the "
      "message names the waiting steps), 2 bad input.");
  cmd->callback([o, &result] { result.exit_code = run_command(*o); });
}

}  // namespace ccsynth::cli
