#include "client/affinity_key.h"

#include <cstdint>
#include <cstdio>

#include "client/chat_client.h"

namespace lockstep::client {

namespace {

void Fnv1a(const std::string& bytes, uint64_t* h) {
  for (const char c : bytes) {
    *h ^= static_cast<unsigned char>(c);
    *h *= 0x100000001b3ull;
  }
  *h ^= 0;
  *h *= 0x100000001b3ull;  // the NUL separator
}

}  // namespace

std::string AffinityKey(const std::vector<ChatMessage>& messages) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const ChatMessage& m : messages) {
    Fnv1a(m.role, &h);
    Fnv1a(m.content, &h);
    if (m.role == "user") break;
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

}  // namespace lockstep::client
