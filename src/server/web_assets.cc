#include "server/web_assets.h"

namespace lockstep::server {

const WebAsset* FindWebAsset(std::string_view path) {
  for (const WebAsset& asset : WebAssets()) {
    if (asset.path == path) return &asset;
  }
  return nullptr;
}

}  // namespace lockstep::server
