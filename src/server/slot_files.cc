#include "server/slot_files.h"

#include <chrono>
#include <filesystem>
#include <memory>
#include <string_view>
#include <vector>

#include "kv/saved_prefix.h"

namespace lockstep::server {
namespace {

std::string PathIn(const std::string& directory, const std::string& filename) {
  return (std::filesystem::path(directory) / filename).string();
}

double MillisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// A file error's message with the server's directory left out: the client named the file only.
std::string WithoutDirectory(std::string message, const std::string& path, const std::string& filename) {
  for (size_t at = message.find(path); at != std::string::npos;
       at = message.find(path, at + filename.size())) {
    message.replace(at, path.size(), filename);
  }
  return message;
}

ApiError InvalidFilename() {
  return ApiError{InvalidArgument("Invalid filename: a plain file name is needed (no path separators, no "
                                  "control characters, not \".\" or \"..\")"),
                  "filename"};
}

// An engine refusal: Unimplemented (this model or no prefix cache) as llama.cpp's not-supported answer.
ApiError EngineError(const Status& status) {
  ApiError error{status, ""};
  if (status.code() == StatusCode::kUnimplemented) error.http_status = 501;
  return error;
}

}  // namespace

bool IsValidSlotFilename(const std::string& name) {
  if (name.empty() || name.size() > 255 || name == "." || name == "..") return false;
  if (name.front() == ' ' || name.back() == ' ' || name.back() == '.') return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const auto byte = static_cast<unsigned char>(name[i]);
    if (byte < 0x20 || byte == 0x7f) return false;
    if (std::string_view("/\\:*?\"<>|").find(char(byte)) != std::string_view::npos) return false;
    // C1 controls, U+0080..U+009F: 0xC2 0x80..0x9F in UTF-8.
    if (byte == 0xc2 && i + 1 < name.size() && static_cast<unsigned char>(name[i + 1]) <= 0x9f) return false;
  }
  return true;
}

Parsed<nlohmann::json> SaveSlot(const SlotFileContext& ctx, int seat, const std::string& filename) {
  if (!IsValidSlotFilename(filename)) return InvalidFilename();
  const auto start = std::chrono::steady_clock::now();
  Result<SavedPrefix> prefix = ctx.engine->ExportPrefix(ctx.slots->SeatTokens(seat));
  if (!prefix.ok()) return EngineError(prefix.status());
  prefix->model_fingerprint = ctx.model_fingerprint;
  const std::string path = PathIn(ctx.directory, filename);
  const Status written = WriteSavedPrefix(path, *prefix);
  if (!written.ok()) {
    return ApiError{Internal("Failed to save slot: " + WithoutDirectory(written.message(), path, filename)),
                    "filename"};
  }
  return nlohmann::json{{"id_slot", seat},
                        {"filename", filename},
                        {"n_saved", prefix->tokens.size()},
                        {"n_written", prefix->FileBytes()},
                        {"timings", {{"save_ms", MillisecondsSince(start)}}}};
}

Parsed<nlohmann::json> RestoreSlot(const SlotFileContext& ctx, int seat, const std::string& filename) {
  if (!IsValidSlotFilename(filename)) return InvalidFilename();
  const auto start = std::chrono::steady_clock::now();
  const std::string path = PathIn(ctx.directory, filename);
  Result<SavedPrefix> read = ReadSavedPrefix(path);
  if (!read.ok()) {
    const std::string why = read.status().code() == StatusCode::kNotFound
                                ? "no such file"
                                : WithoutDirectory(read.status().message(), path, filename);
    return ApiError{Status(read.status().code(), "Failed to restore slot '" + filename + "': " + why),
                    "filename"};
  }
  if (read->model_fingerprint != ctx.model_fingerprint) {
    return ApiError{InvalidArgument("Failed to restore slot '" + filename +
                                    "': it was saved by a server running another model file"),
                    "filename"};
  }
  const uint64_t bytes = read->FileBytes();
  auto prefix = std::make_shared<const SavedPrefix>(std::move(read).value());
  Result<int32_t> restored = ctx.engine->ImportPrefix(prefix);
  if (!restored.ok()) {
    if (restored.status().code() != StatusCode::kInvalidArgument) return EngineError(restored.status());
    return ApiError{
        InvalidArgument("Failed to restore slot '" + filename + "': " + restored.status().message()),
        "filename"};
  }
  ctx.slots->SetSeatTokens(seat,
                           std::vector<int32_t>(prefix->tokens.begin(), prefix->tokens.begin() + *restored));
  return nlohmann::json{{"id_slot", seat},
                        {"filename", filename},
                        {"n_restored", *restored},
                        {"n_read", bytes},
                        {"timings", {{"restore_ms", MillisecondsSince(start)}}}};
}

Parsed<nlohmann::json> EraseSlot(const SlotFileContext& ctx, int seat) {
  std::vector<int32_t> tokens = ctx.slots->SeatTokens(seat);
  const size_t count = tokens.size();
  Result<int64_t> dropped = ctx.engine->ForgetPrefix(std::move(tokens));
  if (!dropped.ok()) return EngineError(dropped.status());
  ctx.slots->SetSeatTokens(seat, {});
  return nlohmann::json{{"id_slot", seat}, {"n_erased", count}};
}

}  // namespace lockstep::server
