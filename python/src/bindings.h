#pragma once
// Shared helpers of the Python bindings (docs/python.md). The bindings are a thin layer: every
// function forwards to the library (plan/, formats/, verify/, sim/, runtime/, lang/) and only
// converts arguments and results.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ccsynth::python {

namespace py = pybind11;

/// nlohmann::json -> the equivalent Python value (through the json module).
py::object to_python(const nlohmann::json& json);
/// A Python value made of dicts, lists, strings, numbers, bools and None -> nlohmann::json.
nlohmann::json from_python(const py::handle& value);

/// Sizes in bytes from a Python int, str ("1M", "1K:1G:4") or a list of them.
std::vector<int64_t> parse_sizes(const py::handle& value);

/// "file:line" of the innermost Python frame outside the ccsynth package (the user's call).
std::string caller_location();

void bind_core(py::module_& m);
void bind_plan(py::module_& m);
void bind_dsl(py::module_& m);

}  // namespace ccsynth::python
