#include "kv/saved_prefix.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>

namespace lockstep {
namespace {

constexpr char kMagic[8] = {'L', 'S', 'K', 'V', 'S', 'A', 'V', 'E'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kHeaderBytes = 8 + 4 + 4 + 8 + 8 + 8 + 8 + 8 + 8;
// Sanity bounds on a header's fields (far above any real model's: 64 Ki tokens a block, 16 GiB a block).
constexpr uint32_t kMaxBlockTokens = 1u << 16;
constexpr uint64_t kMaxBlockBytes = uint64_t(1) << 34;
constexpr uint64_t kMaxStateFloats = uint64_t(1) << 34;
constexpr size_t kFingerprintBytes = size_t(1) << 20;  // ModelFileFingerprint

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

std::string SystemError(const std::string& what, const std::string& path) {
  return what + " '" + path + "': " + std::strerror(errno);
}

template <typename T>
void Put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

template <typename T>
T Get(const char*& at) {
  T value;
  std::memcpy(&value, at, sizeof(T));
  at += sizeof(T);
  return value;
}

}  // namespace

uint64_t SavedPrefix::FileBytes() const {
  return kHeaderBytes + uint64_t(tokens.size()) * sizeof(int32_t) + uint64_t(data.size()) +
         uint64_t(states.size()) * (sizeof(uint64_t) + state_floats * sizeof(float));
}

Status WriteSavedPrefix(const std::string& path, const SavedPrefix& prefix) {
  LOCKSTEP_CHECK(prefix.block_tokens > 0 && prefix.tokens.size() % size_t(prefix.block_tokens) == 0);
  LOCKSTEP_CHECK(prefix.data.size() == size_t(prefix.blocks()) * prefix.block_bytes);
  for (const SavedState& s : prefix.states) {
    LOCKSTEP_CHECK(s.state.size() == prefix.state_floats && s.after_blocks >= 1 &&
                   s.after_blocks <= prefix.blocks());
  }
  std::string header;
  header.append(kMagic, sizeof(kMagic));
  Put<uint32_t>(header, kVersion);
  Put<uint32_t>(header, uint32_t(prefix.block_tokens));
  Put<uint64_t>(header, prefix.chain_root);
  Put<uint64_t>(header, prefix.model_fingerprint);
  Put<uint64_t>(header, prefix.block_bytes);
  Put<uint64_t>(header, uint64_t(prefix.blocks()));
  Put<uint64_t>(header, prefix.state_floats);
  Put<uint64_t>(header, uint64_t(prefix.states.size()));
  // A name of this writer's own: two saves to one path at once must not write into the same file.
  static std::atomic<uint64_t> writes{0};
  const std::string temporary = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(writes++);
  {
    File file(std::fopen(temporary.c_str(), "wb"));
    if (!file) return InvalidArgument(SystemError("cannot write", temporary));
    bool written = std::fwrite(header.data(), 1, header.size(), file.get()) == header.size() &&
                   std::fwrite(prefix.tokens.data(), sizeof(int32_t), prefix.tokens.size(), file.get()) ==
                       prefix.tokens.size() &&
                   std::fwrite(prefix.data.data(), 1, prefix.data.size(), file.get()) == prefix.data.size();
    for (const SavedState& s : prefix.states) {
      const uint64_t after = uint64_t(s.after_blocks);
      written = written && std::fwrite(&after, sizeof(after), 1, file.get()) == 1 &&
                std::fwrite(s.state.data(), sizeof(float), s.state.size(), file.get()) == s.state.size();
    }
    if (!written || std::fflush(file.get()) != 0) {
      const Status error = InvalidArgument(SystemError("error writing", temporary));
      file.reset();
      std::remove(temporary.c_str());
      return error;
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const Status error = InvalidArgument(SystemError("cannot rename '" + temporary + "' to", path));
    std::remove(temporary.c_str());
    return error;
  }
  return Status::Ok();
}

Result<SavedPrefix> ReadSavedPrefix(const std::string& path) {
  File file(std::fopen(path.c_str(), "rb"));
  if (!file) {
    if (errno == ENOENT) return NotFound("no saved prefix '" + path + "'");
    return InvalidArgument(SystemError("cannot open", path));
  }
  const auto fail = [&path](const std::string& what) {
    return InvalidArgument("'" + path + "' is not a lockstep saved prefix: " + what);
  };
  if (std::fseek(file.get(), 0, SEEK_END) != 0) return InvalidArgument(SystemError("cannot read", path));
  const long size = std::ftell(file.get());  // NOLINT(google-runtime-int): ftell's type
  if (size < 0) return InvalidArgument(SystemError("cannot read", path));
  std::rewind(file.get());
  char header[kHeaderBytes];
  if (uint64_t(size) < kHeaderBytes || std::fread(header, 1, kHeaderBytes, file.get()) != kHeaderBytes) {
    return fail(std::to_string(size) + " bytes, shorter than the header's " + std::to_string(kHeaderBytes));
  }
  if (std::memcmp(header, kMagic, sizeof(kMagic)) != 0) return fail("its first bytes are not \"LSKVSAVE\"");
  const char* at = header + sizeof(kMagic);
  const uint32_t version = Get<uint32_t>(at);
  if (version != kVersion) {
    return fail("version " + std::to_string(version) + ", this build reads " + std::to_string(kVersion));
  }
  const uint32_t block_tokens = Get<uint32_t>(at);
  SavedPrefix prefix;
  prefix.chain_root = Get<uint64_t>(at);
  prefix.model_fingerprint = Get<uint64_t>(at);
  prefix.block_bytes = Get<uint64_t>(at);
  const uint64_t blocks = Get<uint64_t>(at);
  const uint64_t state_floats = Get<uint64_t>(at);
  const uint64_t states = Get<uint64_t>(at);
  if (block_tokens < 1 || block_tokens > kMaxBlockTokens) {
    return fail("block of " + std::to_string(block_tokens) + " tokens");
  }
  if (prefix.block_bytes < 1 || prefix.block_bytes > kMaxBlockBytes) {
    return fail("block of " + std::to_string(prefix.block_bytes) + " bytes");
  }
  if (state_floats > kMaxStateFloats) return fail("a state of " + std::to_string(state_floats) + " floats");
  // The body must be exactly `blocks` blocks and `states` states. Checked by division, so that no product
  // can overflow: each part at most what is left of the file.
  const uint64_t body = uint64_t(size) - kHeaderBytes;
  const uint64_t per_block = uint64_t(block_tokens) * sizeof(int32_t) + prefix.block_bytes;
  const uint64_t per_state = sizeof(uint64_t) + state_floats * sizeof(float);
  const bool fits = blocks <= body / per_block && states <= (body - blocks * per_block) / per_state &&
                    body == blocks * per_block + states * per_state;
  if (!fits) {
    return fail(std::to_string(size) + " bytes, but its header says " + std::to_string(blocks) +
                " blocks of " + std::to_string(per_block) + " bytes and " + std::to_string(states) +
                " states of " + std::to_string(state_floats) + " floats after a " +
                std::to_string(kHeaderBytes) + "-byte header (truncated or damaged)");
  }
  prefix.block_tokens = int32_t(block_tokens);
  prefix.tokens.resize(size_t(blocks) * block_tokens);
  prefix.data.resize(size_t(blocks) * prefix.block_bytes);
  prefix.state_floats = state_floats;
  prefix.states.resize(size_t(states));
  bool read = std::fread(prefix.tokens.data(), sizeof(int32_t), prefix.tokens.size(), file.get()) ==
                  prefix.tokens.size() &&
              std::fread(prefix.data.data(), 1, prefix.data.size(), file.get()) == prefix.data.size();
  for (SavedState& s : prefix.states) {
    uint64_t after = 0;
    s.state.resize(size_t(state_floats));
    read = read && std::fread(&after, sizeof(after), 1, file.get()) == 1 &&
           std::fread(s.state.data(), sizeof(float), s.state.size(), file.get()) == s.state.size();
    s.after_blocks = int64_t(std::min<uint64_t>(after, uint64_t(INT64_MAX)));
  }
  if (!read) return InvalidArgument(SystemError("error reading", path));
  for (size_t i = 0; i < prefix.states.size(); ++i) {
    const int64_t after = prefix.states[i].after_blocks;
    if (after < 1 || after > int64_t(blocks) || (i > 0 && after <= prefix.states[i - 1].after_blocks)) {
      return fail("state " + std::to_string(i) + " follows block " + std::to_string(after) + " of " +
                  std::to_string(blocks) + " (states follow blocks 1.." + std::to_string(blocks) +
                  ", in ascending order)");
    }
  }
  for (size_t i = 0; i < prefix.tokens.size(); ++i) {
    if (prefix.tokens[i] < 0) return fail("token " + std::to_string(i) + " is negative");
  }
  return prefix;
}

Result<uint64_t> ModelFileFingerprint(const std::string& path) {
  File file(std::fopen(path.c_str(), "rb"));
  if (!file) return InvalidArgument(SystemError("cannot open the model file", path));
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return InvalidArgument("cannot read the size of the model file '" + path + "'");
  std::string bytes = std::to_string(size) + ":";
  const auto read = [&](size_t count) {
    const size_t at = bytes.size();
    bytes.resize(at + count);
    bytes.resize(at + std::fread(bytes.data() + at, 1, count, file.get()));
  };
  read(size_t(std::min<uintmax_t>(size, kFingerprintBytes)));
  if (size > kFingerprintBytes &&
      std::fseek(file.get(),
                 -long(std::min<uintmax_t>(size - kFingerprintBytes, kFingerprintBytes)),  // NOLINT
                 SEEK_END) == 0) {
    read(kFingerprintBytes);
  }
  return uint64_t(std::hash<std::string>{}(bytes));
}

}  // namespace lockstep
