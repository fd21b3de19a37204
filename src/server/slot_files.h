// Slot files: llama.cpp's POST /slots/{id}?action=save|restore|erase over lockstep's shared prefix cache.
// llama.cpp keeps one KV cache per slot and writes it to a file in --slot-save-path, reads it back into a
// slot, or clears it. lockstep's seats (server/slot_view.h) remember the tokens of the last request each
// held:
//   save     writes the cached KV of those tokens' full blocks (Engine::ExportPrefix; kv/saved_prefix.h),
//            behind the model file's fingerprint;
//   restore  reads such a file into the shared prefix cache (Engine::ImportPrefix): any request whose prompt
//            starts with its tokens then finds their KV, whatever seat it runs in; they become the seat's;
//   erase    drops the idle cached blocks of the seat's tokens (Engine::ForgetPrefix) and forgets them.
// Answers are llama.cpp's: save {id_slot, filename, n_saved, n_written, timings: {save_ms}}, restore
// {id_slot, filename, n_restored, n_read, timings: {restore_ms}}, erase {id_slot, n_erased}. n_saved counts
// the tokens whose KV was written (whole blocks: a partial last block is not saved; its tokens are
// recomputed). Errors: a file name that is not a plain name, a missing or damaged file, or one written for
// another model or KV layout (400; 404 for no such file); models the saved prefixes do not serve (501).
// Runs on the caller's thread (a connection's strand) and waits for the engine between two steps and for
// the file. Thread-safe (no state of its own).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/engine.h"
#include "server/api_error.h"
#include "server/slot_view.h"

namespace lockstep::server {

struct SlotFileContext {
  Engine* engine = nullptr;
  SlotView* slots = nullptr;
  std::string directory;           // --slot-save-path
  uint64_t model_fingerprint = 0;  // ModelFileFingerprint (kv/saved_prefix.h) of the served model
};

// Whether `name` may name a file in the save directory: 1..255 bytes (a JSON string's: valid UTF-8) without
// control characters (C0, DEL, C1), path separators or the characters Windows refuses (\ / : * ? " < > |),
// not starting or ending with a space, not ending with a dot, and neither "." nor "..". (llama.cpp refuses
// the same names.)
bool IsValidSlotFilename(const std::string& name);

// The three actions for seat `seat` (0 <= seat < slots->seats()); `filename` checked here.
Parsed<nlohmann::json> SaveSlot(const SlotFileContext& ctx, int seat, const std::string& filename);
Parsed<nlohmann::json> RestoreSlot(const SlotFileContext& ctx, int seat, const std::string& filename);
Parsed<nlohmann::json> EraseSlot(const SlotFileContext& ctx, int seat);

}  // namespace lockstep::server
