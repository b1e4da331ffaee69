// The module dependency rule (docs/architecture.md sec. 2): the table of DEPS in the document is
// the real one of every src/<module>/CMakeLists.txt, no edge points up the layers, and every
// ccsynth header a module includes belongs to the module or to one it depends on.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;
using Edges = std::map<std::string, std::set<std::string>>;

const fs::path kRoot = CCSYNTH_SOURCE_DIR;

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every module with a src/<module>/CMakeLists.txt and the ccsynth:: targets it links.
Edges cmake_edges() {
  Edges edges;
  const std::regex target(R"(ccsynth::(\w+))");
  for (const auto& entry : fs::directory_iterator(kRoot / "src")) {
    const fs::path cmake = entry.path() / "CMakeLists.txt";
    if (!fs::exists(cmake)) continue;
    const std::string module = entry.path().filename().string();
    std::set<std::string>& deps = edges[module];
    const std::string text = read(cmake);
    for (std::sregex_iterator it(text.begin(), text.end(), target), end; it != end; ++it) {
      const std::string dep = (*it)[1];
      // Modules only: ccsynth::version is a header target, not a module.
      if (dep != module && fs::exists(kRoot / "src" / dep)) deps.insert(dep);
    }
  }
  return edges;
}

// The "depends on" column of the module table: names before any "(+ ...)" or "(planned)".
Edges documented_edges(const std::string& doc) {
  Edges edges;
  const std::regex row(R"(\n\| `(\w+)` \|[^\n]*\| ([^|\n]*) \|)");
  for (std::sregex_iterator it(doc.begin(), doc.end(), row), end; it != end; ++it) {
    std::string deps = (*it)[2];
    deps = deps.substr(0, deps.find('('));
    std::set<std::string>& out = edges[(*it)[1]];
    const std::regex word(R"(\b([a-z]+)\b)");
    if (deps.find("standard library") != std::string::npos) continue;
    for (std::sregex_iterator w(deps.begin(), deps.end(), word), wend; w != wend; ++w) {
      if ((*w)[1] != "and") out.insert((*w)[1]);
    }
  }
  return edges;
}

// The layer of each module from the "layer N   a b c" lines.
std::map<std::string, int> layers(const std::string& doc) {
  std::map<std::string, int> out;
  const std::regex line(R"(\n\s*layer (\d+)\s+([a-z ]+))");
  for (std::sregex_iterator it(doc.begin(), doc.end(), line), end; it != end; ++it) {
    std::istringstream names((*it)[2].str());
    for (std::string name; names >> name;) out[name] = std::stoi((*it)[1]);
  }
  return out;
}

std::set<std::string> closure(const Edges& edges, const std::string& module) {
  std::set<std::string> seen;
  std::vector<std::string> todo = {module};
  while (!todo.empty()) {
    const std::string m = todo.back();
    todo.pop_back();
    if (!seen.insert(m).second) continue;
    const auto it = edges.find(m);
    if (it != edges.end()) todo.insert(todo.end(), it->second.begin(), it->second.end());
  }
  return seen;
}

class DependencyRule : public ::testing::Test {
 protected:
  const std::string doc = read(kRoot / "docs" / "architecture.md");
  const Edges real = cmake_edges();
};

TEST_F(DependencyRule, TheDocumentStatesTheRealEdges) {
  ASSERT_GE(real.size(), 10u) << "src/<module>/CMakeLists.txt files not found";
  const Edges documented = documented_edges(doc);
  for (const auto& [module, deps] : real) {
    ASSERT_TRUE(documented.count(module)) << module << " has no row in docs/architecture.md";
    EXPECT_EQ(documented.at(module), deps) << "DEPS of " << module;
  }
}

TEST_F(DependencyRule, NoEdgePointsUp) {
  const std::map<std::string, int> layer = layers(doc);
  for (const auto& [module, deps] : real) {
    ASSERT_TRUE(layer.count(module)) << module << " is in no layer of docs/architecture.md";
    for (const std::string& dep : deps) {
      ASSERT_TRUE(layer.count(dep)) << dep;
      EXPECT_LT(layer.at(dep), layer.at(module)) << module << " -> " << dep;
    }
  }
}

TEST_F(DependencyRule, ModulesIncludeOnlyWhatTheyDependOn) {
  const std::regex include(R"(#include "ccsynth/(\w+)/)");
  for (const auto& [module, deps] : real) {
    const std::set<std::string> allowed = closure(real, module);
    for (const fs::path& dir : {kRoot / "src" / module, kRoot / "include" / "ccsynth" / module}) {
      if (!fs::exists(dir)) continue;
      for (const auto& file : fs::recursive_directory_iterator(dir)) {
        const std::string text = read(file.path());
        for (std::sregex_iterator it(text.begin(), text.end(), include), end; it != end; ++it) {
          EXPECT_TRUE(allowed.count((*it)[1]))
              << file.path() << " includes ccsynth/" << (*it)[1] << "/ outside its DEPS";
        }
      }
    }
  }
}

}  // namespace
