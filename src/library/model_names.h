// The names a scan's models answer to (library-internal): unique within one scan, deterministic.
#pragma once

#include <vector>

#include "library/model_catalog.h"

namespace ember::library {

// Claims each record's proposed name in vector order (the scan's: source order, then path order). The
// first claimant keeps it; a later one becomes "name@<source>", then "name@<source>-2", -3, ... (the first
// of those not yet taken, a proposed name included).
void AssignUniqueNames(std::vector<ModelRecord>* models);

}  // namespace ember::library
