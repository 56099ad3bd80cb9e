// Where the SSD cold tier lives by default: $XDG_CACHE_HOME/ember, else ~/.cache/ember (the XDG base
// directory convention). Read by the CLI only (`ember serve`, `ember cache`); the server is handed a path.
#pragma once

#include <string>

namespace ember {

// Empty if neither XDG_CACHE_HOME (absolute) nor HOME is set.
std::string DefaultSsdCacheDir();

}  // namespace ember
