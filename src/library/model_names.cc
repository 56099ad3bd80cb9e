#include "library/model_names.h"

#include <set>
#include <string>

namespace ember::library {

void AssignUniqueNames(std::vector<ModelRecord>* models) {
  // Every proposed name is reserved up front, so a suffixed name never takes one that a later record
  // proposes for itself (a file really named "x@ember.gguf").
  std::set<std::string> proposed;
  for (const ModelRecord& r : *models) proposed.insert(r.name);
  std::set<std::string> taken;
  for (ModelRecord& r : *models) {
    if (taken.insert(r.name).second) continue;
    const std::string base = r.name + "@" + ModelSourceName(r.source);
    std::string name = base;
    for (int n = 2; taken.count(name) != 0 || proposed.count(name) != 0; ++n) name = base + "-" + std::to_string(n);
    taken.insert(name);
    r.name = std::move(name);
  }
}

}  // namespace ember::library
