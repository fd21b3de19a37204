// WebAssets: the dashboard and playground files of web/ (HTML, ES modules, CSS), built into the binary by
// cmake/embed_web.cmake, so `lockstep serve` needs no files and no network to serve them. Immutable;
// thread-safe.
#pragma once

#include <string_view>
#include <vector>

namespace lockstep::server {

struct WebAsset {
  std::string_view path;          // relative to web/, e.g. "index.html", "js/app.js"
  std::string_view content_type;  // from the extension
  std::string_view body;
};

// Every embedded file (defined in the generated source).
const std::vector<WebAsset>& WebAssets();
// The file at `path` (relative to web/), or null.
const WebAsset* FindWebAsset(std::string_view path);

}  // namespace lockstep::server
