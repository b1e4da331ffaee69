#include "cli/method_flags.h"

#include <algorithm>
#include <map>

#include "ccsynth/core/error.h"

namespace ccsynth::cli {

namespace {

// Parameter name -> the methods declaring it (in registry order) and its declaration.
struct FlagOwners {
  const synth::SynthParam* param = nullptr;
  std::vector<std::string> methods;
};

std::map<std::string, FlagOwners> owners_of(const std::vector<const synth::Synthesizer*>& methods) {
  std::map<std::string, FlagOwners> owners;
  for (const synth::Synthesizer* m : methods) {
    for (const synth::SynthParam& p : m->params) {
      FlagOwners& o = owners[p.name];
      if (o.param == nullptr) o.param = &p;
      o.methods.push_back(m->name);
    }
  }
  return owners;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The text of a numeric flag as JSON of the parameter's kind.
nlohmann::json typed_value(const synth::SynthParam& p, const std::string& flag,
                           const std::string& text) {
  try {
    size_t used = 0;
    if (p.kind == synth::ParamKind::kInt) {
      const long long v = std::stoll(text, &used);
      if (used == text.size()) return v;
    } else if (p.kind == synth::ParamKind::kDouble) {
      const double v = std::stod(text, &used);
      if (used == text.size()) return v;
    } else {
      return text;
    }
  } catch (const std::exception&) {
    // falls through to the error below
  }
  throw UserError("", flag, "expected " + synth::to_string(p.kind) + ", got '" + text + "'");
}

}  // namespace

void add_method_flags(CLI::App& command, const std::vector<const synth::Synthesizer*>& methods) {
  for (const auto& [name, owners] : owners_of(methods)) {
    const std::string flag = "--" + name;
    const std::string help = joined(owners.methods) + ": " + owners.param->help;
    if (owners.param->kind == synth::ParamKind::kBool) {
      command.add_flag(flag, help);
    } else {
      const bool text = owners.param->kind == synth::ParamKind::kString;
      command.add_option(flag, help)->type_name(text ? "TEXT" : "NUMBER");
    }
  }
}

nlohmann::json given_params(const CLI::App& command, const synth::Synthesizer& method,
                            const std::vector<const synth::Synthesizer*>& methods) {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [name, owners] : owners_of(methods)) {
    const std::string flag = "--" + name;
    if (!given(command, flag)) continue;
    const std::string& param_name = name;  // a structured binding cannot be captured (C++17)
    const auto own =
        std::find_if(method.params.begin(), method.params.end(),
                     [&param_name](const synth::SynthParam& p) { return p.name == param_name; });
    if (own == method.params.end()) {
      throw UserError("", flag,
                      "is a flag of " + joined(owners.methods) + ", not of " + method.name);
    }
    params[name] = own->kind == synth::ParamKind::kBool
                       ? nlohmann::json(true)
                       : typed_value(*own, flag, command.get_option(flag)->results().front());
  }
  return params;
}

bool given(const CLI::App& command, const std::string& flag) {
  const CLI::Option* option = command.get_option_no_throw(flag);
  return option != nullptr && option->count() > 0;
}

std::vector<const synth::Synthesizer*> all_methods() {
  std::vector<const synth::Synthesizer*> out;
  for (const synth::Synthesizer& s : synth::synthesizers()) out.push_back(&s);
  return out;
}

std::vector<const synth::Synthesizer*> baseline_methods() {
  std::vector<const synth::Synthesizer*> out;
  for (const synth::Synthesizer& s : synth::synthesizers()) {
    if (s.baseline) out.push_back(&s);
  }
  return out;
}

}  // namespace ccsynth::cli
