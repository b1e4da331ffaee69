// Bindings of the core model and the modules below the planner: topologies, collectives,
// algorithms, programs (MSCCL-IR XML), verification, compilation, simulation, the CPU runtime.

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>

#include <pybind11/operators.h>

#include "bindings.h"
#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/algorithm.h"
#include "ccsynth/core/collective.h"
#include "ccsynth/core/error.h"
#include "ccsynth/core/program.h"
#include "ccsynth/core/topology.h"
#include "ccsynth/formats/algorithm_json.h"
#include "ccsynth/formats/collective_json.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/formats/topology_json.h"
#include "ccsynth/plan/limits.h"
#include "ccsynth/plan/report.h"
#include "ccsynth/runtime/data_type.h"
#include "ccsynth/runtime/harness.h"
#include "ccsynth/sim/bounds.h"
#include "ccsynth/sim/simulate.h"
#include "ccsynth/topologies/library.h"
#include "ccsynth/verify/report.h"
#include "ccsynth/verify/verify_algorithm.h"
#include "ccsynth/verify/verify_program.h"

namespace ccsynth::python {

namespace {

template <typename T>
std::string streamed(const T& value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

Protocol protocol_of(const std::string& text) {
  const std::optional<Protocol> protocol = parse_protocol(text);
  if (!protocol)
    throw UserError("", "protocol", "unknown protocol '" + text + "' (Simple, LL, LL128)");
  return *protocol;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) throw UserError(path, "", "cannot open for writing");
  out << text;
  if (!out) throw UserError(path, "", "cannot write");
}

py::dict op_dict(const ChunkOp& op) {
  py::dict d;
  d["chunk"] = op.chunk;
  d["src"] = op.src;
  d["dst"] = op.dst;
  d["kind"] = to_string(op.kind);
  d["step"] = op.step;
  d["count"] = op.count;
  if (op.start_us >= 0) d["start_us"] = op.start_us;
  if (op.channel >= 0) d["channel"] = op.channel;
  if (op.send_tb >= 0) d["sendtb"] = op.send_tb;
  if (op.recv_tb >= 0) d["recvtb"] = op.recv_tb;
  return d;
}

}  // namespace

void bind_core(py::module_& m) {
  // --- topologies ---------------------------------------------------------------------------
  py::class_<Topology>(m, "Topology", "A topology: ranks, links with alpha-beta costs, switches.")
      .def_readonly("name", &Topology::name)
      .def_readonly("num_ranks", &Topology::num_ranks)
      .def_readonly("nodes", &Topology::nodes)
      .def_property_readonly("num_links", [](const Topology& t) { return t.links.size(); })
      .def_property_readonly("links",
                             [](const Topology& t) {
                               py::list links;
                               for (const Link& l : t.links) {
                                 py::dict d;
                                 d["src"] = l.src;
                                 d["dst"] = l.dst;
                                 d["lanes"] = l.lanes;
                                 d["alpha_us"] = l.alpha_us;
                                 d["beta_us_per_mb"] = l.beta_us_per_mb;
                                 d["kind"] = l.kind;
                                 links.append(d);
                               }
                               return links;
                             })
      .def("to_json", [](const Topology& t) { return formats::write_topology_json(t); })
      .def("__str__", &streamed<Topology>)
      .def("__repr__", [](const Topology& t) {
        return "<ccsynth.Topology " + t.name + ": " + std::to_string(t.num_ranks) + " ranks, " +
               std::to_string(t.links.size()) + " links>";
      });
  m.def("topology", &topologies::resolve_topology, py::arg("name_or_path"),
        "A built-in topology by name ('dgx1', 'ring:8', 'ndv4x2', ...) or a topology JSON file.");
  m.def(
      "topologies",
      [] {
        py::dict out;
        for (const topologies::BuiltinInfo& info : topologies::builtin_catalog()) {
          out[py::str(info.name)] = info.description;
        }
        return out;
      },
      "The built-in topologies and patterns: {name: description}.");

  // --- collectives --------------------------------------------------------------------------
  // dynamic_attr: the MSCCLang-style helpers (AllReduce(..., inplace)) attach `inplace`.
  py::class_<Collective>(m, "Collective", "What a collective moves: pre and post slots per chunk.",
                         py::dynamic_attr())
      .def_property_readonly("kind", [](const Collective& c) { return to_string(c.kind); })
      .def_readonly("name", &Collective::name)
      .def_readonly("num_ranks", &Collective::num_ranks)
      .def_readonly("chunks_per_rank", &Collective::chunks_per_rank)
      .def_readonly("root", &Collective::root)
      .def_readonly("combining", &Collective::combining)
      .def_readonly("input_chunks", &Collective::input_chunks)
      .def_readonly("output_chunks", &Collective::output_chunks)
      .def_property_readonly("num_chunks", &Collective::num_chunks)
      .def("to_json", [](const Collective& c) { return formats::collective_to_json(c).dump(2); })
      .def(py::self == py::self)
      .def("__repr__", [](const Collective& c) {
        return "<ccsynth.Collective " + c.name + ": " + std::to_string(c.num_ranks) + " ranks, " +
               std::to_string(c.chunks_per_rank) + " chunk(s) per rank>";
      });
  m.def("collective", &formats::resolve_collective, py::arg("name_or_path"), py::arg("num_ranks"),
        py::arg("chunks_per_rank") = 1, py::arg("root") = 0,
        "A built-in collective by name ('allgather', 'allreduce', 'alltonext', ...) or a "
        "collective JSON file.");
  m.def(
      "collective_kinds",
      [] {
        std::vector<std::string> names;
        for (const CollectiveKind kind : builtin_collective_kinds())
          names.push_back(to_string(kind));
        return names;
      },
      "Names of the built-in collective kinds.");

  // --- algorithms ---------------------------------------------------------------------------
  py::class_<Algorithm>(m, "Algorithm",
                        "Chunk copies and reductions between ranks, in steps (the Algorithm IR).")
      .def_readonly("name", &Algorithm::name)
      .def_readonly("topology", &Algorithm::topology)
      .def_readonly("collective", &Algorithm::collective)
      .def_property_readonly("num_steps", &Algorithm::num_steps)
      .def_property_readonly("num_ops", [](const Algorithm& a) { return a.ops.size(); })
      .def_property_readonly("ops",
                             [](const Algorithm& a) {
                               py::list ops;
                               for (const ChunkOp& op : a.ops) ops.append(op_dict(op));
                               return ops;
                             })
      .def("to_json",
           [](const Algorithm& a) { return formats::dump_json(formats::algorithm_to_json(a)); })
      .def(
          "write_json",
          [](const Algorithm& a, const std::string& path) {
            write_file(path, formats::dump_json(formats::algorithm_to_json(a)));
          },
          py::arg("path"))
      .def("__str__", &streamed<Algorithm>)
      .def("__repr__", [](const Algorithm& a) {
        return "<ccsynth.Algorithm " + a.name + ": " + a.collective.name + ", " +
               std::to_string(a.num_steps()) + " steps, " + std::to_string(a.ops.size()) + " ops>";
      });
  m.def("read_algorithm", &formats::read_algorithm_file, py::arg("path"),
        "Reads an algorithm JSON file.");
  m.def(
      "algorithm_from_json",
      [](const std::string& text) {
        return formats::algorithm_from_json(formats::parse_json(text, "<string>"), "<string>");
      },
      py::arg("text"));

  // --- programs (MSCCL-IR) ------------------------------------------------------------------
  py::class_<Program>(m, "Program", "A compiled MSCCL-IR program (threadblocks of steps per rank).")
      .def_readonly("name", &Program::name)
      .def_property_readonly("collective", [](const Program& p) { return to_string(p.collective); })
      .def_property_readonly("protocol", [](const Program& p) { return to_string(p.protocol); })
      .def_readonly("num_ranks", &Program::num_ranks)
      .def_readonly("num_channels", &Program::num_channels)
      .def_readonly("chunks_per_loop", &Program::chunks_per_loop)
      .def_readonly("inplace", &Program::inplace)
      .def_readonly("outofplace", &Program::outofplace)
      .def_property_readonly("num_threadblocks", &Program::total_threadblocks)
      .def_property_readonly("num_steps", &Program::total_steps)
      .def(
          "summary", [](const Program& p) { return to_python(plan::program_json(p)); },
          "Size and shape: protocol, channels, threadblocks, steps, ...")
      .def(
          "to_xml",
          [](const Program& p, const std::string& dialect) {
            return formats::write_msccl_xml(p, formats::parse_xml_dialect(dialect));
          },
          py::arg("dialect") = "executor", "MSCCL-IR XML ('executor' or 'classic').")
      .def(
          "write_xml",
          [](const Program& p, const std::string& path, const std::string& dialect) {
            write_file(path, formats::write_msccl_xml(p, formats::parse_xml_dialect(dialect)));
          },
          py::arg("path"), py::arg("dialect") = "executor")
      .def("__repr__", [](const Program& p) {
        return "<ccsynth.Program " + p.name + ": " + to_string(p.collective) + ", " +
               std::to_string(p.num_ranks) + " ranks, " + std::to_string(p.total_threadblocks()) +
               " threadblocks, " + std::to_string(p.total_steps()) + " steps>";
      });
  m.def("read_xml", &formats::read_msccl_xml_file, py::arg("path"),
        "Reads an MSCCL-IR XML file (either dialect).");
  m.def(
      "parse_xml",
      [](const std::string& text) { return formats::read_msccl_xml(text, "<string>"); },
      py::arg("text"));
  m.def("collective_of", &collective_of, py::arg("program"),
        "The built-in collective a program implements (from its coll, ngpus and buffer sizes).");

  m.def(
      "compile",
      [](const Algorithm& algorithm, int instances, const std::string& protocol, bool inplace,
         const std::string& dialect, bool fuse, const std::string& name) {
        compiler::CompileOptions options;
        options.name = name;
        options.instances = instances;
        options.protocol = protocol_of(protocol);
        options.inplace = inplace;
        options.fuse = fuse;
        plan::apply_runtime_limits(options, formats::parse_xml_dialect(dialect));
        return compiler::compile(algorithm, options);
      },
      py::arg("algorithm"), py::arg("instances") = 1, py::arg("protocol") = "Simple",
      py::arg("inplace") = false, py::arg("dialect") = "executor", py::arg("fuse") = true,
      py::arg("name") = "", "Compiles an Algorithm into a Program within the dialect's limits.");

  // --- verification -------------------------------------------------------------------------
  py::class_<verify::VerifyReport>(m, "VerifyReport", "Violations found by the verifier.")
      .def_property_readonly("ok", &verify::VerifyReport::ok)
      .def("__bool__", &verify::VerifyReport::ok)
      .def_property_readonly("violations",
                             [](const verify::VerifyReport& r) {
                               std::vector<std::string> out;
                               for (const verify::Violation& v : r.violations)
                                 out.push_back(streamed(v));
                               return out;
                             })
      .def(
          "to_list",
          [](const verify::VerifyReport& r) { return to_python(plan::violations_json(r)); },
          "Violations as dicts {kind, rank, threadblock, step, message}.")
      .def("summary", &verify::VerifyReport::summary)
      .def("__repr__", [](const verify::VerifyReport& r) {
        return r.ok() ? std::string("<ccsynth.VerifyReport ok>")
                      : "<ccsynth.VerifyReport " + std::to_string(r.violations.size()) +
                            " violation(s)>";
      });
  m.def(
      "verify_algorithm",
      [](const Algorithm& algorithm, const std::optional<Topology>& topology) {
        return verify::verify_algorithm(algorithm, topology ? &*topology : nullptr);
      },
      py::arg("algorithm"), py::arg("topology") = py::none(),
      "Symbolic verification of an Algorithm (and that its ops use the topology's links).");
  m.def(
      "verify_program",
      [](const Program& program, const std::optional<Collective>& collective, int fifo_slots) {
        verify::VerifyProgramOptions options;
        options.collective = collective ? &*collective : nullptr;
        options.fifo_slots = fifo_slots;
        return verify::verify_program(program, options);
      },
      py::arg("program"), py::arg("collective") = py::none(), py::arg("fifo_slots") = 8,
      "Symbolic verification of a Program against its collective (default collective_of).");

  // --- simulation and bounds ----------------------------------------------------------------
  m.def(
      "simulate",
      [](const Program& program, const Topology& topology, const py::object& sizes) {
        py::list out;
        std::vector<int64_t> bytes = parse_sizes(sizes);
        if (bytes.empty()) bytes = {int64_t{1} << 20};
        for (const int64_t b : bytes) {
          const sim::SimResult r = sim::simulate(program, topology, b);
          py::dict d;
          d["bytes"] = r.bytes;
          d["time_us"] = r.time_us;
          d["algbw_gbps"] = r.algbw_gbps;
          d["busbw_gbps"] = r.busbw_gbps;
          d["slices"] = r.slices;
          d["events"] = r.events;
          d["critical_path"] = r.critical_path;
          out.append(d);
        }
        return out;
      },
      py::arg("program"), py::arg("topology"), py::arg("sizes") = py::none(),
      "Simulates a Program on a Topology at each size (bytes per rank; default 1M).");
  m.def(
      "lower_bound",
      [](const Topology& topology, const Collective& collective, const py::object& size) {
        const std::vector<int64_t> bytes = parse_sizes(size);
        if (bytes.size() != 1) throw UserError("", "size", "give exactly one size");
        const sim::LowerBound b = sim::lower_bound(topology, collective, bytes.front());
        py::dict d;
        d["lower_bound_us"] = b.lower_bound_us;
        d["latency_us"] = b.latency_us;
        d["bandwidth_us"] = b.bandwidth_us;
        d["ingress_egress_us"] = b.ingress_egress_us;
        d["cut_us"] = b.cut_us;
        d["total_traffic_us"] = b.total_traffic_us;
        d["node_traffic_us"] = b.node_traffic_us;
        return d;
      },
      py::arg("topology"), py::arg("collective"), py::arg("size"),
      "Lower bound on the collective's time on the topology at `size` bytes per rank.");

  // --- the CPU runtime ----------------------------------------------------------------------
  m.def(
      "run_cpu",
      [](const Program& program, const py::object& size, bool check, bool inplace,
         const std::optional<Collective>& collective, const std::string& dtype,
         const std::string& op, int iters, uint64_t seed, double timeout_s) {
        int64_t bytes = 0;
        if (size.is_none()) {
          // As `ccsynth demo` runs its programs: 1024 floats per input chunk.
          // (The larger of the input and output chunks, so in-place layouts divide it too.)
          int chunks = 1;
          for (const GpuProgram& gpu : program.gpus) {
            chunks = std::max({chunks, gpu.input_chunks, gpu.output_chunks});
          }
          if (collective) chunks = std::max(collective->input_chunks, 1);
          bytes = int64_t{chunks} * 1024 * 4;
        } else {
          const std::vector<int64_t> sizes = parse_sizes(size);
          if (sizes.size() != 1) throw UserError("", "size", "give exactly one size");
          bytes = sizes.front();
        }
        runtime::HarnessOptions options;
        options.exec.dtype = runtime::parse_data_type(dtype, "dtype");
        options.exec.op = runtime::parse_reduce_op(op, "op");
        options.exec.timeout_s = timeout_s;
        options.inplace = inplace;
        options.check = check;
        options.iters = iters;
        options.seed = seed;
        options.collective = collective ? &*collective : nullptr;
        runtime::HarnessResult r;
        {
          py::gil_scoped_release release;
          r = runtime::run_program(program, bytes, options);
        }
        py::dict d;
        d["ok"] = r.ok;
        d["message"] = r.message;
        d["bytes"] = r.bytes;
        d["time_us"] = r.time_us;
        d["min_time_us"] = r.min_time_us;
        d["checked"] = r.checked;
        d["checked_elements"] = r.checked_elements;
        d["mismatches"] = r.mismatches;
        d["max_error"] = r.max_error;
        d["workers"] = r.workers;
        return d;
      },
      py::arg("program"), py::arg("size") = py::none(), py::arg("check") = true,
      py::arg("inplace") = false, py::arg("collective") = py::none(), py::arg("dtype") = "float32",
      py::arg("op") = "sum", py::arg("iters") = 1, py::arg("seed") = 1, py::arg("timeout_s") = 60.0,
      "Runs a Program on CPU threads with random inputs; with check=True compares the outputs "
      "with the directly computed collective. Returns a dict (ok, message, checked_elements, "
      "...).");
}

}  // namespace ccsynth::python
