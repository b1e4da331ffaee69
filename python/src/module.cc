// The extension module ccsynth._ccsynth: errors, conversions and the bindings of core.cc,
// plan.cc and dsl.cc. The package's __init__.py adds the MSCCLang-style program stack.

#include <filesystem>

#include "bindings.h"
#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/version.h"

namespace ccsynth::python {

py::object to_python(const nlohmann::json& json) {
  return py::module_::import("json").attr("loads")(json.dump());
}

nlohmann::json from_python(const py::handle& value) {
  const std::string text = py::str(py::module_::import("json").attr("dumps")(value));
  return nlohmann::json::parse(text);
}

std::vector<int64_t> parse_sizes(const py::handle& value) {
  std::vector<int64_t> sizes;
  if (value.is_none()) return sizes;
  if (py::isinstance<py::str>(value)) return parse_byte_list(value.cast<std::string>(), "sizes");
  if (py::isinstance<py::int_>(value)) return {value.cast<int64_t>()};
  for (const py::handle item : value) {
    for (const int64_t bytes : parse_sizes(item)) sizes.push_back(bytes);
  }
  return sizes;
}

namespace {
// The directory of the package's Python files (set by __init__.py); frames there are skipped.
std::string& package_dir() {
  static std::string dir;
  return dir;
}
}  // namespace

std::string caller_location() {
  // The package's own Python files (ccsynth/__init__.py, ...) are skipped, so a call made
  // through a wrapper there is located at the user's line.
  const py::module_ sys = py::module_::import("sys");
  py::object frame = sys.attr("_getframe")(0);
  std::string fallback;
  while (!frame.is_none()) {
    const std::string file = py::str(frame.attr("f_code").attr("co_filename"));
    const std::filesystem::path path(file);
    const std::string here =
        path.filename().string() + ":" + std::to_string(frame.attr("f_lineno").cast<int>());
    if (fallback.empty()) fallback = here;
    const bool ours = package_dir().empty() ? path.parent_path().filename() == "ccsynth"
                                            : path.parent_path().string() == package_dir();
    if (!ours) return here;
    frame = frame.attr("f_back");
  }
  return fallback;
}

}  // namespace ccsynth::python

PYBIND11_MODULE(_ccsynth, m) {
  namespace py = pybind11;
  m.doc() = "ccsynth: synthesize, write (MSCCLang DSL), verify, compile and simulate collectives";
  m.attr("__version__") = CCSYNTH_VERSION;
  // UserError: a mistake in the user's input (ValueError); InternalError: a bug (RuntimeError).
  py::register_exception<ccsynth::UserError>(m, "UserError", PyExc_ValueError);
  py::register_exception<ccsynth::InternalError>(m, "InternalError", PyExc_RuntimeError);
  m.def(
      "parse_bytes", [](const std::string& text) { return ccsynth::parse_bytes(text, "size"); },
      py::arg("text"), "Bytes of a size like '1M' or '64K'.");
  m.def("parse_sizes", &ccsynth::python::parse_sizes, py::arg("sizes"),
        "Sizes in bytes from an int, a str ('1M', '1K:1G:4') or a list of them.");
  m.def(
      "_set_package_dir", [](const std::string& dir) { ccsynth::python::package_dir() = dir; },
      py::arg("dir"));
  m.def("format_bytes", &ccsynth::format_bytes, py::arg("bytes"));
  ccsynth::python::bind_core(m);
  ccsynth::python::bind_plan(m);
  ccsynth::python::bind_dsl(m);
}
