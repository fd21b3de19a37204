// Test helper: a software model of the AMX tile unit (palette 1: 8 tiles of up to 16 rows x 64 bytes) with
// the interface tensor/matmul_amx_kernel.h expects, so the AMX kernel's data flow can be checked on CPUs
// without AMX. It follows the architecture's rules and reports every breach as a test failure: LDTILECFG's
// operand (palette 1, reserved bytes zero, rows <= 16, bytes per row <= 64 and a multiple of 4, unused tiles
// all zero), loads/stores only of configured tiles, and TDPBSUD's shape rules (C rows = A rows, C bytes per
// row = B bytes per row, A bytes per row = 4 x B rows). Tile contents start as garbage after a configure, as
// on hardware, so a product that forgets to zero its C tile fails.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "tensor/matmul_amx_kernel.h"

namespace lockstep::testing {

class AmxTileModel {
 public:
  void Configure(const amx::AmxTileConfig& c) {
    configured_ = false;
    ++configures_;
    const auto* bytes = reinterpret_cast<const uint8_t*>(&c);
    if (c.palette != 1) return Fail("palette must be 1");
    for (int i = 2; i < 16; ++i) {
      if (bytes[i] != 0) return Fail("reserved byte not zero");
    }
    for (int t = 0; t < 16; ++t) {
      const bool used = c.rows[t] != 0 || c.colsb[t] != 0;
      if (t >= 8 && used) return Fail("tile 8..15 configured with palette 1");
      if (!used) continue;
      if (c.rows[t] == 0 || c.rows[t] > 16 || c.colsb[t] == 0 || c.colsb[t] > 64 || c.colsb[t] % 4 != 0) {
        return Fail("bad tile shape");
      }
    }
    config_ = c;
    configured_ = true;
    std::memset(tiles_, 0xA5, sizeof(tiles_));  // stale contents
  }
  template <int kTile>
  void Load(const void* base, int64_t stride) {
    if (!Usable(kTile)) return;
    for (int r = 0; r < config_.rows[kTile]; ++r) {
      std::memcpy(tiles_[kTile][r], static_cast<const uint8_t*>(base) + r * stride, config_.colsb[kTile]);
    }
  }
  template <int kTile>
  void Zero() {
    if (Usable(kTile)) std::memset(tiles_[kTile], 0, sizeof(tiles_[kTile]));
  }
  template <int kTile>
  void Store(void* base, int64_t stride) {
    if (!Usable(kTile)) return;
    for (int r = 0; r < config_.rows[kTile]; ++r) {
      std::memcpy(static_cast<uint8_t*>(base) + r * stride, tiles_[kTile][r], config_.colsb[kTile]);
    }
  }
  template <int kC, int kA, int kB>
  void DotSignedUnsigned() {
    Dot<kC, kA, kB, false>();
  }
  template <int kC, int kA, int kB>
  void DotSignedSigned() {
    Dot<kC, kA, kB, true>();
  }
  void Release() {
    configured_ = false;
    ++releases_;
  }

  bool configured() const { return configured_; }
  int configures() const { return configures_; }
  int releases() const { return releases_; }
  int64_t products() const { return products_; }

 private:
  // TDPBSUD (kSignedB false) or TDPBSSD: C[m][n] += sum over k of A[m][k] x B[k / 4][4n + k % 4].
  template <int kC, int kA, int kB, bool kSignedB>
  void Dot() {
    if (!Usable(kC) || !Usable(kA) || !Usable(kB)) return;
    if (kC == kA || kC == kB || kA == kB) return Fail("TDPBSUD / TDPBSSD operands must differ");
    if (config_.rows[kC] != config_.rows[kA] || config_.colsb[kC] != config_.colsb[kB] ||
        config_.colsb[kA] != 4 * config_.rows[kB]) {
      return Fail("TDPBSUD / TDPBSSD shapes do not match");
    }
    ++products_;
    for (int m = 0; m < config_.rows[kC]; ++m) {
      for (int n = 0; n < config_.colsb[kC] / 4; ++n) {
        int32_t sum;
        std::memcpy(&sum, &tiles_[kC][m][4 * n], 4);
        for (int k = 0; k < config_.colsb[kA]; ++k) {
          const uint8_t w = tiles_[kB][k / 4][4 * n + k % 4];
          sum += int32_t(static_cast<int8_t>(tiles_[kA][m][k])) *
                 (kSignedB ? int32_t(static_cast<int8_t>(w)) : int32_t(w));
        }
        std::memcpy(&tiles_[kC][m][4 * n], &sum, 4);
      }
    }
  }
  bool Usable(int tile) {
    if (!configured_) {
      Fail("tile instruction before LDTILECFG (or after TILERELEASE)");
      return false;
    }
    if (config_.rows[tile] == 0) {
      Fail("tile not configured");
      return false;
    }
    return true;
  }
  void Fail(const char* what) { ADD_FAILURE() << "AMX rule broken: " << what; }

  amx::AmxTileConfig config_;
  bool configured_ = false;
  int configures_ = 0, releases_ = 0;
  int64_t products_ = 0;
  uint8_t tiles_[8][16][64];
};

}  // namespace lockstep::testing
