// The GPT-2 byte-to-unicode map used by byte-level BPE: each of the 256 byte values is shown as one printable
// code point ('!'..'~', '¡'..'¬', '®'..'ÿ' map to themselves; the other 68 bytes to U+0100.. in order), so a
// piece like "Ġworld" stands for the bytes " world". Pure functions over constant tables.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lockstep::byte_level {

// Code point standing for `byte`.
uint32_t ByteToCodePoint(unsigned char byte);
// Byte a code point stands for; -1 when it is not in the map.
int CodePointToByte(uint32_t cp);
// Appends the mapped form of every byte of `bytes` (UTF-8).
void EncodeBytes(std::string_view bytes, std::string* out);
// The bytes a byte-level piece stands for. Code points outside the map are copied as their UTF-8.
std::string DecodePiece(std::string_view piece);

}  // namespace lockstep::byte_level
