// The browser UI: GET / (chat), /dashboard (cache dashboard) and their scripts, style and icon under
// /ui/, from the files embedded at build time (webui_assets.h). The pages hold no data, so they need no
// key; every API call they make sends the key the user gave. The Host check and CORS of HttpServer's
// pre-routing apply to them like to every route. docs/webui.md.
#include <string>

#include "server/routes.h"
#include "server/webui_assets.h"

namespace ember::server {
namespace {

// Self only, and no inline script or style: model output is never markup, but if a bug ever let it
// become markup, nothing in it could run or load.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

// index.html is "/", another page "/<name without .html>", everything else "/ui/<name>".
std::string UrlPath(std::string_view name) {
  constexpr std::string_view kHtml = ".html";
  if (name == "index.html") return "/";
  // (append, not "/" + std::string: GCC 12 warns falsely about that concatenation, -Wrestrict)
  std::string path = "/";
  if (name.ends_with(kHtml)) return path.append(name.substr(0, name.size() - kHtml.size()));
  return path.append("ui/").append(name);
}

void ServeAsset(const WebAsset& a, const httplib::Request& req, httplib::Response& res) {
  res.set_header("Content-Security-Policy", kContentSecurityPolicy);
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Referrer-Policy", "no-referrer");
  // Revalidate every time (a new binary may serve new files); the ETag makes that a 304.
  res.set_header("Cache-Control", "no-cache");
  res.set_header("ETag", std::string(a.etag));
  if (req.get_header_value("If-None-Match") == a.etag) {
    res.status = 304;
    return;
  }
  res.status = 200;
  res.set_content(a.body.data(), a.body.size(), std::string(a.content_type));
}

}  // namespace

std::vector<Route> WebUiRoutes(ServerContext&) {
  std::vector<Route> routes;
  for (const WebAsset& asset : WebAssets()) {
    const WebAsset* a = &asset;  // static storage
    routes.push_back({"GET", UrlPath(a->name), ApiFlavor::kOpenAI, /*needs_auth=*/false,
                      [a](const httplib::Request& req, httplib::Response& res) -> std::optional<ApiError> {
                        ServeAsset(*a, req, res);
                        return std::nullopt;
                      }});
  }
  return routes;
}

}  // namespace ember::server
