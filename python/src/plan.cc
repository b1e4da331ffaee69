// Bindings of the planner (plan/planner.h, plan/dsl.h): synthesize or take an algorithm, verify,
// compile its variants, simulate against the lower bound and the NCCL-like ring.

#include <fstream>
#include <optional>
#include <sstream>

#include "bindings.h"
#include "ccsynth/compiler/instances.h"
#include "ccsynth/core/error.h"
#include "ccsynth/core/synth_status.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/lang/program.h"
#include "ccsynth/plan/dsl.h"
#include "ccsynth/plan/planner.h"
#include "ccsynth/plan/report.h"
#include "ccsynth/synth/registry.h"

namespace ccsynth::python {

namespace {

Protocol protocol_of(const std::string& text) {
  const std::optional<Protocol> protocol = parse_protocol(text);
  if (!protocol)
    throw UserError("", "protocol", "unknown protocol '" + text + "' (Simple, LL, LL128)");
  return *protocol;
}

py::list results_list(const plan::Evaluated& e) {
  py::list out;
  for (const plan::SizedResult& r : e.results) {
    py::dict d;
    d["bytes"] = r.bytes;
    d["time_us"] = r.time_us;
    d["algbw_gbps"] = r.algbw_gbps;
    d["busbw_gbps"] = r.busbw_gbps;
    d["lower_bound_us"] = r.lower_bound_us;
    d["ratio_to_bound"] = r.ratio_to_bound();
    d["instances"] = r.instances;
    d["fused"] = r.fused;
    d["schedule_order"] = r.schedule_order;
    out.append(d);
  }
  return out;
}

std::vector<std::string> violations(const plan::Evaluated& e) {
  std::vector<std::string> out;
  for (const verify::VerifyReport* report : {&e.algorithm_report, &e.program_report}) {
    for (const verify::Violation& v : report->violations) {
      std::ostringstream text;
      text << v;
      out.push_back(text.str());
    }
  }
  return out;
}

const plan::Evaluated& program_of(const plan::PlanResult& r) {
  if (!r.program)
    throw UserError("", "program",
                    "no algorithm was found (status " + to_string(r.synthesis.status) + ")");
  return *r.program;
}

std::string xml_of(const plan::PlanResult& r, const std::optional<std::string>& dialect) {
  if (!r.ok()) {
    throw UserError("", "program", "the result did not verify: no XML is written");
  }
  if (!dialect) return r.xml();
  return formats::write_msccl_xml(r.program->program, formats::parse_xml_dialect(*dialect));
}

// The programs a report compares: the result's, then the nccl reference when it verified.
std::pair<std::vector<std::string>, std::vector<const plan::Evaluated*>> rows(
    const plan::PlanResult& r, const std::string& name) {
  std::vector<std::string> names = {name};
  std::vector<const plan::Evaluated*> evaluated = {&program_of(r)};
  if (r.nccl && r.nccl->ok() && name != "nccl") {
    names.push_back("nccl");
    evaluated.push_back(&*r.nccl);
  }
  return {names, evaluated};
}

plan::PlanRequest request_for(const Topology& topology, const py::object& sizes,
                              const std::string& dialect, bool compare_with_nccl) {
  plan::PlanRequest request;
  request.topology = topology;
  request.sizes = parse_sizes(sizes);
  request.dialect = formats::parse_xml_dialect(dialect);
  request.compare_with_nccl = compare_with_nccl;
  return request;
}

}  // namespace

void bind_plan(py::module_& m) {
  py::class_<plan::Evaluated>(
      m, "Evaluated", "An algorithm carried through verification, compilation and simulation.")
      .def_property_readonly("ok", &plan::Evaluated::ok)
      .def_readonly("algorithm", &plan::Evaluated::algorithm)
      .def_readonly("program", &plan::Evaluated::program)
      .def_readonly("algorithm_report", &plan::Evaluated::algorithm_report)
      .def_readonly("program_report", &plan::Evaluated::program_report)
      .def_readonly("compiled", &plan::Evaluated::compiled)
      .def_property_readonly("results", &results_list,
                             "Per size: bytes, time_us, lower_bound_us, busbw_gbps, ...")
      .def_property_readonly("violations", &violations)
      .def_property_readonly("instances",
                             [](const plan::Evaluated& e) { return e.options.instances; })
      .def_property_readonly("fused", [](const plan::Evaluated& e) { return e.options.fuse; })
      .def_property_readonly("inplace", [](const plan::Evaluated& e) { return e.options.inplace; })
      .def_property_readonly(
          "collective",
          [](const plan::Evaluated& e) {
            return compiler::replicate_collective(e.algorithm.collective, e.options.instances);
          },
          "The collective the kept program implements (the algorithm's, with every "
          "chunk split into the program's instances).")
      .def_property_readonly(
          "variant", [](const plan::Evaluated& e) { return plan::variant_description(e.options); })
      .def("to_dict", [](const plan::Evaluated& e) { return to_python(plan::to_json(e)); });

  py::class_<plan::PlanResult>(m, "PlanResult", "What the planner found (plan/planner.h).")
      .def_property_readonly("ok", &plan::PlanResult::ok)
      .def("__bool__", &plan::PlanResult::ok)
      .def_property_readonly(
          "status", [](const plan::PlanResult& r) { return to_string(r.synthesis.status); })
      .def_property_readonly("stats",
                             [](const plan::PlanResult& r) { return to_python(r.synthesis.stats); })
      .def_readonly("synthesis_seconds", &plan::PlanResult::synthesis_seconds)
      .def_readonly("collective", &plan::PlanResult::collective)
      .def_readonly("sizes", &plan::PlanResult::sizes)
      .def_property_readonly(
          "dialect", [](const plan::PlanResult& r) { return formats::to_string(r.dialect); })
      .def_property_readonly(
          "evaluated", [](const plan::PlanResult& r) { return r.program; },
          "The kept program's evaluation (None when nothing was found).")
      .def_property_readonly(
          "nccl", [](const plan::PlanResult& r) { return r.nccl; },
          "The nccl reference's evaluation: what NCCL would run (None when not applicable).")
      .def_property_readonly("algorithm",
                             [](const plan::PlanResult& r) -> std::optional<Algorithm> {
                               if (r.program) return r.program->algorithm;
                               return r.synthesis.algorithm;
                             })
      .def_property_readonly("program",
                             [](const plan::PlanResult& r) { return program_of(r).program; })
      .def_property_readonly(
          "results", [](const plan::PlanResult& r) { return results_list(program_of(r)); },
          "Per size: bytes, time_us, lower_bound_us, busbw_gbps, instances, ...")
      .def_property_readonly("nccl_results",
                             [](const plan::PlanResult& r) {
                               return r.nccl && r.nccl->ok() ? results_list(*r.nccl) : py::list();
                             })
      .def_property_readonly(
          "violations", [](const plan::PlanResult& r) { return violations(program_of(r)); },
          "Violations of the algorithm and the program (empty when ok).")
      .def_property_readonly("variant",
                             [](const plan::PlanResult& r) {
                               return plan::variant_description(program_of(r).options);
                             })
      .def_property_readonly(
          "summary",
          [](const plan::PlanResult& r) {
            return to_python(plan::program_json(program_of(r).program));
          },
          "The kept program's threadblocks, steps, channels, ...")
      .def_property_readonly("best_time_us",
                             [](const plan::PlanResult& r) {
                               if (!r.ok() || r.sizes.empty())
                                 throw UserError("", "program",
                                                 "no verified program was simulated");
                               return r.best_time_us();
                             })
      .def("xml", &xml_of, py::arg("dialect") = py::none(),
           "The kept program as MSCCL-IR XML (the request's dialect unless given).")
      .def(
          "write_xml",
          [](const plan::PlanResult& r, const std::string& path,
             const std::optional<std::string>& dialect) {
            const std::string text = xml_of(r, dialect);
            std::ofstream out(path);
            if (!out) throw UserError(path, "", "cannot open for writing");
            out << text;
            if (!out) throw UserError(path, "", "cannot write");
          },
          py::arg("path"), py::arg("dialect") = py::none())
      .def(
          "table",
          [](const plan::PlanResult& r, const std::string& name) {
            const auto [names, evaluated] = rows(r, name);
            return plan::results_table(names, evaluated);
          },
          py::arg("name") = "program",
          "Per size the simulated time against the ring and the lower bound, as `ccsynth synth` "
          "prints.")
      .def(
          "to_dict",
          [](const plan::PlanResult& r, const std::string& name) {
            nlohmann::json doc = {{"ok", r.ok()},
                                  {"status", to_string(r.synthesis.status)},
                                  {"synthesis_seconds", r.synthesis_seconds},
                                  {"details", r.synthesis.stats}};
            if (r.program) {
              doc["program"] = plan::to_json(*r.program);
              if (r.nccl) doc["nccl"] = plan::to_json(*r.nccl);
              if (r.ok()) {
                const auto [names, evaluated] = rows(r, name);
                doc["best"] = plan::best_json(names, evaluated);
              }
            }
            return to_python(doc);
          },
          py::arg("name") = "program", "The result as the CLI's JSON (program, nccl, best).")
      .def("__repr__", [](const plan::PlanResult& r) {
        std::string text = "<ccsynth.PlanResult " + r.collective.name + ": ";
        if (!r.program) return text + "no algorithm (" + to_string(r.synthesis.status) + ")>";
        return text + (r.ok() ? "verified" : "FAILED verification") + ">";
      });

  m.def(
      "results_table",
      [](const std::vector<std::string>& names, const std::vector<plan::Evaluated>& evaluated) {
        std::vector<const plan::Evaluated*> rows;
        for (const plan::Evaluated& e : evaluated) rows.push_back(&e);
        return plan::results_table(names, rows);
      },
      py::arg("names"), py::arg("evaluated"),
      "Per size the simulated time of every evaluated program (Evaluated records sharing their "
      "sizes), the lower bound and the fastest against \"ring\", as the CLI prints it.");
  m.def(
      "best_per_size",
      [](const std::vector<std::string>& names, const std::vector<plan::Evaluated>& evaluated) {
        std::vector<const plan::Evaluated*> rows;
        for (const plan::Evaluated& e : evaluated) rows.push_back(&e);
        return to_python(plan::best_json(names, rows));
      },
      py::arg("names"), py::arg("evaluated"),
      "Per size the fastest of the evaluated programs, its ratio to the bound and its speedup "
      "over \"ring\" (the CLI's JSON).");

  m.def(
      "methods",
      [] {
        py::list out;
        for (const synth::Synthesizer& s : synth::synthesizers()) {
          py::dict d;
          d["name"] = s.name;
          d["description"] = s.description;
          d["baseline"] = s.baseline;
          py::list params;
          for (const synth::SynthParam& p : s.params) {
            py::dict pd;
            pd["name"] = p.name;
            pd["kind"] = synth::to_string(p.kind);
            pd["help"] = p.help;
            params.append(pd);
          }
          d["params"] = params;
          out.append(d);
        }
        return out;
      },
      "The registered synthesis methods with their parameters.");

  m.def(
      "_plan",
      [](const std::string& method, const Topology& topology,
         const std::optional<Collective>& collective, const std::string& kind, int chunks, int root,
         const py::object& sizes, const py::object& synth_size, double time_limit_s,
         const py::object& params, const std::vector<int>& instances, const std::string& protocol,
         bool inplace, const std::string& dialect, bool compare_with_nccl) {
        plan::PlanRequest request = request_for(topology, sizes, dialect, compare_with_nccl);
        request.method = method;
        if (collective) {
          request.collective = *collective;
        } else {
          request.kind = parse_collective_kind(kind, "collective");
        }
        request.chunks = chunks;
        request.root = root;
        if (!synth_size.is_none()) {
          const std::vector<int64_t> bytes = parse_sizes(synth_size);
          if (bytes.size() != 1) throw UserError("", "size", "give exactly one size");
          request.synth.bytes = bytes.front();
        }
        request.synth.time_limit_s = time_limit_s;
        request.synth.params = from_python(params);
        request.compile.protocol = protocol_of(protocol);
        request.compile.inplace = inplace;
        if (!instances.empty()) request.variants.instances = instances;
        py::gil_scoped_release release;
        return plan::plan(request);
      },
      py::arg("method"), py::arg("topology"), py::arg("collective"), py::arg("kind"),
      py::arg("chunks"), py::arg("root"), py::arg("sizes"), py::arg("synth_size"),
      py::arg("time_limit_s"), py::arg("params"), py::arg("instances"), py::arg("protocol"),
      py::arg("inplace"), py::arg("dialect"), py::arg("compare_with_nccl"));

  m.def(
      "plan_algorithm",
      [](const Algorithm& algorithm, const Topology& topology, const py::object& sizes,
         const std::vector<int>& instances, const std::string& protocol, bool inplace,
         const std::string& dialect, bool compare_with_nccl) {
        plan::PlanRequest request = request_for(topology, sizes, dialect, compare_with_nccl);
        request.compile.protocol = protocol_of(protocol);
        request.compile.inplace = inplace;
        if (!instances.empty()) request.variants.instances = instances;
        py::gil_scoped_release release;
        return plan::plan_algorithm(algorithm, request);
      },
      py::arg("algorithm"), py::arg("topology"), py::arg("sizes") = py::none(),
      py::arg("instances") = std::vector<int>{1}, py::arg("protocol") = "Simple",
      py::arg("inplace") = false, py::arg("dialect") = "executor",
      py::arg("compare_with_nccl") = true,
      "Evaluates an algorithm made elsewhere (a file, the DSL) as plan() would.");

  m.def(
      "_plan_dsl",
      [](const lang::DslProgram& program, const Topology& topology, const py::object& sizes,
         const std::string& dialect, bool compare_with_nccl) {
        plan::PlanRequest request = request_for(topology, sizes, dialect, compare_with_nccl);
        py::gil_scoped_release release;
        return plan::plan_dsl(program, request);
      },
      py::arg("program"), py::arg("topology"), py::arg("sizes"), py::arg("dialect"),
      py::arg("compare_with_nccl"));
}

}  // namespace ccsynth::python
