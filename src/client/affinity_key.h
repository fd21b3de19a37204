// AffinityKey: the value lockstep's client sends in the X-Affinity-Key header so that a balancer can keep a
// conversation on one replica, where its prefix cache holds the conversation so far (deploy/nginx hashes the
// header with `hash $http_x_affinity_key consistent`; requests without it are balanced by least_conn).
//
// The key is a hash of the conversation's opening: every message up to and including the first user message
// (all messages when none is from the user). OpenAI-style requests carry no conversation id, and the
// opening is what stays the same in every later turn of a conversation, so each turn lands where the
// previous ones left their KV blocks. Different conversations under one shared system prompt get different
// keys and spread over the replicas: each replica then computes that system prompt once and caches it,
// instead of one replica taking all the traffic. Other clients may send their own conversation or session id
// in the same header. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace lockstep::client {

struct ChatMessage;

inline constexpr const char* kAffinityKeyHeader = "X-Affinity-Key";

// 16 lower-case hex digits (64-bit FNV-1a over role and content, each followed by a NUL byte).
std::string AffinityKey(const std::vector<ChatMessage>& messages);

}  // namespace lockstep::client
