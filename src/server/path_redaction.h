// Client-facing text names files, never where they are: an absolute path tells a remote client about the
// server's file system (user names, mount points). The server's own log keeps the full path.
#pragma once

#include <string>
#include <string_view>

namespace ember::server {

// `text` with each absolute path ("/a/b/c.gguf", "~/m/x.gguf": a word that starts with '/' or "~/")
// cut to its last component ("c.gguf"). A word starts at the start, after white space, a quote, a
// bracket or '=', and ends at white space, a quote, a bracket, ',' or ';'.
std::string WithoutPaths(std::string_view text);

}  // namespace ember::server
