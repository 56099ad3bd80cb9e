// The browser UI's files (src/server/webui/: the chat, the cache dashboard, their scripts and style),
// compiled into the binary by cmake/embed_webui.cmake: nothing is read from disk at run time and the
// JS has no build step. Served by WebUiRoutes (routes.h); docs/webui.md.
#pragma once

#include <span>
#include <string_view>

namespace ember::server {

struct WebAsset {
  std::string_view name;          // the file's name in src/server/webui/, e.g. "app.js"
  std::string_view content_type;  // from the extension, with charset for text
  std::string_view etag;          // quoted strong validator: the start of the bytes' SHA-256
  std::string_view body;          // the file's bytes
};

// Every embedded file, sorted by name. The views point at static storage (valid for the process).
std::span<const WebAsset> WebAssets();

}  // namespace ember::server
