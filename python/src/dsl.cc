// Bindings of the MSCCLang-style DSL (lang/program.h). Every operation is located at the
// Python caller's file:line (caller_location), so errors name the user's line. The program
// stack, `chunk()` and `with parallelize(n):` are in the package's __init__.py.

#include <optional>

#include "bindings.h"
#include "ccsynth/core/error.h"
#include "ccsynth/core/program.h"
#include "ccsynth/lang/program.h"

namespace ccsynth::python {

namespace {

std::string kind_name(lang::BufferKind kind) {
  switch (kind) {
    case lang::BufferKind::kInput: return "input";
    case lang::BufferKind::kOutput: return "output";
    case lang::BufferKind::kScratch: return "scratch";
  }
  return "scratch";
}

lang::Directives directives(int ch, int sendtb, int recvtb) { return {ch, sendtb, recvtb}; }

py::dict operation_dict(const lang::Operation& op) {
  py::dict d;
  d["kind"] = to_string(op.kind);
  d["src_rank"] = op.src_rank;
  d["src_buffer"] = op.src_buffer.name;
  d["src_index"] = op.src_index;
  d["dst_rank"] = op.dst_rank;
  d["dst_buffer"] = op.dst_buffer.name;
  d["dst_index"] = op.dst_index;
  d["count"] = op.count;
  d["ch"] = op.directives.channel;
  d["sendtb"] = op.directives.sendtb;
  d["recvtb"] = op.directives.recvtb;
  d["parallel"] = op.parallel;
  d["where"] = op.where;
  d["depends_on"] = op.depends_on;
  d["text"] = lang::describe(op);
  return d;
}

}  // namespace

void bind_dsl(py::module_& m) {
  py::class_<lang::Buffer> buffer(
      m, "Buffer",
      "A buffer of every rank: Buffer.input, Buffer.output, or a scratch "
      "buffer by name (any other string).");
  buffer.def(py::init(&lang::Buffer::parse), py::arg("name"))
      .def_property_readonly("kind", [](const lang::Buffer& b) { return kind_name(b.kind); })
      .def_readonly("name", &lang::Buffer::name)
      .def_static("named", &lang::Buffer::scratch, py::arg("name"), "The scratch buffer `name`.")
      .def("__eq__", [](const lang::Buffer& a, const lang::Buffer& b) { return a == b; })
      .def(
          "__hash__",
          [](const lang::Buffer& b) { return py::hash(py::make_tuple(kind_name(b.kind), b.name)); })
      .def("__str__", [](const lang::Buffer& b) { return lang::to_string(b); })
      .def("__repr__", [](const lang::Buffer& b) { return "Buffer('" + b.name + "')"; });
  buffer.attr("input") = lang::Buffer::input();
  buffer.attr("output") = lang::Buffer::output();
  buffer.attr("scratch") = lang::Buffer::scratch();
  // chunk(r, 'in', 0) and c.copy(r, 'scratch', 0): a str converts to a Buffer (Buffer.parse).
  py::implicitly_convertible<py::str, lang::Buffer>();

  py::class_<lang::ChunkRef>(
      m, "ChunkRef",
      "A reference to `count` consecutive chunks of a rank's buffer; only the "
      "latest reference to a location may be used.")
      .def_property_readonly("rank", &lang::ChunkRef::rank)
      .def_property_readonly("buffer", &lang::ChunkRef::buffer)
      .def_property_readonly("index", &lang::ChunkRef::index)
      .def_property_readonly("count", &lang::ChunkRef::count)
      .def("describe", &lang::ChunkRef::describe)
      .def(
          "copy",
          [](const lang::ChunkRef& self, int rank, const lang::Buffer& buffer, int index, int ch,
             int sendtb, int recvtb) {
            return self.copy_at(caller_location(), rank, buffer, index,
                                directives(ch, sendtb, recvtb));
          },
          py::arg("rank"), py::arg("buffer"), py::arg("index"), py::arg("ch") = -1,
          py::arg("sendtb") = -1, py::arg("recvtb") = -1, py::keep_alive<0, 1>(),
          "Copies the chunks to (rank, buffer, index); returns the reference there.")
      .def(
          "reduce",
          [](const lang::ChunkRef& self, const lang::ChunkRef& other, int ch, int sendtb,
             int recvtb) {
            return self.reduce_at(caller_location(), other, directives(ch, sendtb, recvtb));
          },
          py::arg("other"), py::arg("ch") = -1, py::arg("sendtb") = -1, py::arg("recvtb") = -1,
          py::keep_alive<0, 1>(),
          "Reduces `other` into these chunks in place; returns the new reference here.")
      .def("__repr__",
           [](const lang::ChunkRef& c) { return "<ccsynth.ChunkRef " + c.describe() + ">"; });

  py::class_<lang::DslProgram>(m, "_DslProgram",
                               "A DSL program (lang/program.h); see ccsynth.DslProgram.")
      .def(py::init([](const Collective& collective, const std::string& name,
                       const std::string& topology, int instances, const std::string& protocol,
                       bool inplace) {
             lang::ProgramOptions options;
             options.name = name;
             options.topology = topology;
             options.instances = instances;
             const std::optional<Protocol> parsed = parse_protocol(protocol);
             if (!parsed) {
               throw UserError("", "protocol",
                               "unknown protocol '" + protocol + "' (Simple, LL, LL128)");
             }
             options.protocol = *parsed;
             options.inplace = inplace;
             return std::make_unique<lang::DslProgram>(collective, options);
           }),
           py::arg("collective"), py::arg("name") = "dsl", py::arg("topology") = "",
           py::arg("instances") = 1, py::arg("protocol") = "Simple", py::arg("inplace") = false)
      .def(
          "chunk",
          [](lang::DslProgram& self, int rank, const lang::Buffer& buffer, int index, int count) {
            return self.chunk_at(caller_location(), rank, buffer, index, count);
          },
          py::arg("rank"), py::arg("buffer"), py::arg("index"), py::arg("count") = 1,
          py::keep_alive<0, 1>(),
          "A reference to the chunks now at (rank, buffer, index..+count-1).")
      .def(
          "begin_parallelize",
          [](lang::DslProgram& self, int factor) {
            self.begin_parallelize(factor, caller_location());
          },
          py::arg("factor"))
      .def("end_parallelize", &lang::DslProgram::end_parallelize)
      .def_property_readonly("collective", &lang::DslProgram::collective)
      .def_property_readonly("name", [](const lang::DslProgram& p) { return p.options().name; })
      .def_property_readonly("instances",
                             [](const lang::DslProgram& p) { return p.options().instances; })
      .def_property_readonly(
          "protocol", [](const lang::DslProgram& p) { return to_string(p.options().protocol); })
      .def_property_readonly("inplace",
                             [](const lang::DslProgram& p) { return p.options().inplace; })
      .def_property_readonly(
          "operations",
          [](const lang::DslProgram& p) {
            py::list out;
            for (const lang::Operation& op : p.operations()) out.append(operation_dict(op));
            return out;
          },
          "The traced operations (the Chunk DAG) as dicts, in program order.")
      .def_property_readonly("scratch_sizes", &lang::DslProgram::scratch_sizes)
      .def("check", &lang::DslProgram::check,
           "Raises UserError naming the first output slot that misses the postcondition.")
      .def("to_algorithm", &lang::DslProgram::to_algorithm,
           "check(), then the traced Algorithm (raises UserError when the postcondition fails).");
}

}  // namespace ccsynth::python
