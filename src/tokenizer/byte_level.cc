#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/utf8.h"

namespace lockstep::byte_level {
namespace {

constexpr bool PrintsAsItself(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<uint32_t, 256> byte_to_cp{};
  std::array<int16_t, 256 + 68> cp_to_byte{};  // code points 0..323
};

constexpr Tables MakeTables() {
  Tables t;
  for (auto& v : t.cp_to_byte) v = -1;
  int next = 0;
  for (int b = 0; b < 256; ++b) {
    const uint32_t cp = PrintsAsItself(b) ? static_cast<uint32_t>(b) : static_cast<uint32_t>(256 + next++);
    t.byte_to_cp[b] = cp;
    t.cp_to_byte[cp] = static_cast<int16_t>(b);
  }
  return t;
}

constexpr Tables kTables = MakeTables();
static_assert(kTables.byte_to_cp[' '] == 0x120, "space maps to U+0120 (Ġ)");

}  // namespace

uint32_t ByteToCodePoint(unsigned char byte) { return kTables.byte_to_cp[byte]; }

int CodePointToByte(uint32_t cp) { return cp < kTables.cp_to_byte.size() ? kTables.cp_to_byte[cp] : -1; }

void EncodeBytes(std::string_view bytes, std::string* out) {
  for (char c : bytes) utf8::Append(kTables.byte_to_cp[static_cast<unsigned char>(c)], out);
}

std::string DecodePiece(std::string_view piece) {
  std::string out;
  out.reserve(piece.size());
  size_t pos = 0;
  while (pos < piece.size()) {
    const size_t start = pos;
    const uint32_t cp = utf8::DecodeAt(piece, &pos);
    const int byte = CodePointToByte(cp);
    if (byte >= 0) {
      out.push_back(static_cast<char>(byte));
    } else {
      out.append(piece.substr(start, pos - start));
    }
  }
  return out;
}

}  // namespace lockstep::byte_level
