#include "client/hub_download.h"

#include <openssl/evp.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string_view>

#include "client/chat_client.h"
#include "client/fan_out.h"

namespace lockstep::client {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;

struct Expected {
  uint64_t size = 0;   // 0 = unknown
  std::string sha256;  // "" = unknown
};

std::optional<uint64_t> ParseU64(const std::string& s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

struct ContentRange {
  uint64_t start = 0;
  uint64_t end = 0;
  std::optional<uint64_t> total;  // absent for "/*"
};

// "bytes START-END/TOTAL" or "bytes START-END/*" (RFC 9110 §14.4); nullopt for anything else.
std::optional<ContentRange> ParseContentRange(const std::string& value) {
  const std::string prefix = "bytes ";
  if (value.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const size_t dash = value.find('-', prefix.size());
  const size_t slash = value.find('/', prefix.size());
  if (dash == std::string::npos || slash == std::string::npos || dash > slash) return std::nullopt;
  ContentRange range;
  const auto start = ParseU64(value.substr(prefix.size(), dash - prefix.size()));
  const auto end = ParseU64(value.substr(dash + 1, slash - dash - 1));
  if (!start || !end || *end < *start) return std::nullopt;
  range.start = *start;
  range.end = *end;
  const std::string total = value.substr(slash + 1);
  if (total != "*") {
    range.total = ParseU64(total);
    if (!range.total || *range.total <= range.end) return std::nullopt;
  }
  return range;
}

// An ETag value that is a SHA-256 ("W/" prefix and quotes removed), else "".
std::string Sha256FromEtag(std::string etag) {
  if (etag.rfind("W/", 0) == 0) etag = etag.substr(2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  if (etag.size() != 64) return "";
  for (char& c : etag) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return "";
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return etag;
}

void NoteHeaders(const HttpResponseHead& head, Expected* expected) {
  if (expected->size == 0) {
    if (auto v = ParseU64(head.Header("X-Linked-Size"))) expected->size = *v;
  }
  if (expected->sha256.empty()) expected->sha256 = Sha256FromEtag(head.Header("X-Linked-Etag"));
  if (expected->sha256.empty()) expected->sha256 = Sha256FromEtag(head.Header("ETag"));
}

Clock::time_point After(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

struct AttemptResult {
  Status status;
  bool complete = false;  // the .part holds the whole file
  bool retryable = false;
};

// One download attempt: request from the .part's size on, follow redirects, append to the .part.
asio::awaitable<AttemptResult> Attempt(const PullOptions& o, const Url& start_url, const std::string& part,
                                       std::shared_ptr<asio::ssl::context> tls, CancellationToken* token,
                                       Expected* expected, const PullProgressFn& progress) {
  std::error_code fec;
  uint64_t offset = fs::exists(part) ? fs::file_size(part, fec) : 0;
  Url url = start_url;
  for (int hop = 0; hop <= 10; ++hop) {
    HttpRequest req{"GET", url, {}, ""};
    if (!o.token.empty() && url.host == start_url.host)
      req.headers.emplace_back("Authorization", "Bearer " + o.token);
    if (offset > 0) req.headers.emplace_back("Range", "bytes=" + std::to_string(offset) + "-");
    auto conn = co_await HttpConnection::Connect(url, tls, After(o.idle_timeout_s), token);
    if (!conn.ok())
      co_return AttemptResult{conn.status(), false, conn.status().code() == StatusCode::kUnavailable};
    if (Status s = co_await (*conn)->Send(req); !s.ok()) co_return AttemptResult{s, false, true};
    auto head = co_await (*conn)->ReadHead();
    if (!head.ok())
      co_return AttemptResult{head.status(), false, head.status().code() != StatusCode::kCancelled};
    NoteHeaders(*head, expected);
    const int status = head->status;
    if (status >= 300 && status < 400 && status != 304) {
      auto next = ResolveLocation(url, head->Header("Location"));
      if (!next.ok()) co_return AttemptResult{next.status().WithContext("redirect from " + url.ToString())};
      if (url.tls() && !next->tls()) {
        co_return AttemptResult{
            InvalidArgument("refusing a redirect from https to http: " + next->ToString())};
      }
      url = *next;
      continue;
    }
    if (status == 416 && expected->size > 0 && offset == expected->size)
      co_return AttemptResult{Status::Ok(), true};
    if (status == 416) {  // the .part is not a prefix we can resume: start over
      fs::remove(part, fec);
      co_return AttemptResult{Unavailable("server refused to resume; restarting"), false, true};
    }
    if (status != 200 && status != 206) {
      std::string body;
      (void)co_await (*conn)->ReadBody(&body);
      const std::string what =
          "HTTP " + std::to_string(status) + " for " + url.ToString() +
          (status == 401 || status == 403 ? " (gated or private repo? set HF_TOKEN)" : "") +
          (status == 404 ? " (no such repo, revision or file)" : "");
      co_return AttemptResult{Status(status == 404 ? StatusCode::kNotFound : StatusCode::kUnavailable, what),
                              false, IsRetryableStatus(status)};
    }
    if (status == 200) offset = 0;  // the server ignored the Range: rewrite from the start
    if (status == 206) {
      const std::string value = head->Header("Content-Range");
      const auto range = ParseContentRange(value);
      if (!range || range->start != offset) {
        co_return AttemptResult{
            InvalidArgument("HTTP 206 for " + url.ToString() + " with " +
                            (value.empty() ? std::string("no Content-Range")
                                           : "a bad Content-Range '" + value.substr(0, 80) + "'") +
                            " for a resume at byte " + std::to_string(offset))};
      }
      if (range->total && expected->size == 0) expected->size = *range->total;
    }
    if (expected->size == 0) {
      if (auto len = ParseU64(head->Header("Content-Length"))) expected->size = offset + *len;
    }
    std::ofstream out(part,
                      offset == 0 ? std::ios::binary | std::ios::trunc : std::ios::binary | std::ios::app);
    if (!out) co_return AttemptResult{InvalidArgument("cannot write '" + part + "'")};
    uint64_t done = offset;
    std::string chunk;
    for (;;) {
      chunk.clear();
      (*conn)->SetDeadline(After(o.idle_timeout_s));
      auto more = co_await (*conn)->ReadBody(&chunk);
      if (!more.ok()) {
        out.flush();
        co_return AttemptResult{more.status(), false, more.status().code() != StatusCode::kCancelled};
      }
      if (!*more) break;
      out.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      if (!out) co_return AttemptResult{InvalidArgument("write to '" + part + "' failed (disk full?)")};
      done += chunk.size();
      if (progress) progress(done, expected->size);
    }
    co_return AttemptResult{Status::Ok(), true};
  }
  co_return AttemptResult{InvalidArgument("too many redirects from " + start_url.ToString())};
}

// A GGUF file starts with the 4 bytes "GGUF": anything else (an HTML error page, a text file, a model in
// another format) is no download of a model `lockstep` can load.
Status CheckGgufMagic(const std::string& path, const Url& url) {
  char magic[4] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(magic, sizeof magic);
  if (in.gcount() == 4 && std::string_view(magic, 4) == "GGUF") return Status::Ok();
  return InvalidArgument(
      url.ToString() + " sent no GGUF file (it does not start with \"GGUF\"); the download " + "was removed");
}

}  // namespace

Result<std::string> Sha256File(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read '" + path + "'");
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(in.gcount()));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &len);
  std::string hex;
  char b[3];
  for (unsigned int i = 0; i < len; ++i) {
    std::snprintf(b, sizeof(b), "%02x", digest[i]);
    hex += b;
  }
  return hex;
}

Result<std::string> PullFile(const PullOptions& o, CancellationToken* token, const PullProgressFn& progress) {
  const std::string& spec = o.repo_file;
  const size_t s1 = spec.find('/');
  const size_t s2 = s1 == std::string::npos ? std::string::npos : spec.find('/', s1 + 1);
  if (s2 == std::string::npos || s1 == 0 || s2 == s1 + 1 || s2 + 1 >= spec.size() ||
      spec.find("..") != std::string::npos) {
    return InvalidArgument("'" + spec +
                           "' is not OWNER/REPO/FILE (e.g. bartowski/SmolLM2-135M-Instruct-GGUF/"
                           "SmolLM2-135M-Instruct-Q8_0.gguf)");
  }
  const std::string repo = spec.substr(0, s2), file = spec.substr(s2 + 1);
  std::string endpoint = o.endpoint;
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  LOCKSTEP_ASSIGN_OR_RETURN(Url url, ParseUrl(endpoint + "/" + repo + "/resolve/" + o.revision + "/" + file));
  std::shared_ptr<asio::ssl::context> tls;
  LOCKSTEP_ASSIGN_OR_RETURN(tls, MakeTlsContext(o.tls));
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) return InvalidArgument("cannot create '" + o.out_dir + "': " + ec.message());
  const std::string dest = (fs::path(o.out_dir) / fs::path(file).filename()).string();
  const std::string part = dest + ".part";
  Expected expected;
  std::mt19937_64 rng(std::random_device{}());
  RetryPolicy policy;
  for (int attempt = 0;; ++attempt) {
    AttemptResult r = RunBlocking(Attempt(o, url, part, tls, token, &expected, progress));
    if (r.complete) break;
    if (token != nullptr && token->cancelled())
      return Cancelled("download cancelled; run again to resume from " + part);
    if (!r.retryable || attempt >= o.retries) return r.status;
    std::fprintf(stderr, "lockstep: %s; retrying\n", r.status.message().c_str());
    RunBlocking(SleepFor(RetryDelaySeconds(policy, attempt, std::nullopt, rng), token));
  }
  const uint64_t size = fs::file_size(part, ec);
  if (expected.size > 0 && size != expected.size) {
    return Unavailable("size mismatch for " + part + ": expected " + std::to_string(expected.size) +
                       " bytes, got " + std::to_string(size) + " (run again to resume)");
  }
  if (!expected.sha256.empty()) {
    LOCKSTEP_ASSIGN_OR_RETURN(std::string actual, Sha256File(part));
    if (actual != expected.sha256) {
      fs::remove(part, ec);
      return InvalidArgument("sha256 mismatch for " + file + ": expected " + expected.sha256 + ", got " +
                             actual + " (the corrupt download was removed)");
    }
  }
  if (Status s = CheckGgufMagic(part, url); !s.ok()) {
    fs::remove(part, ec);
    return s;
  }
  fs::rename(part, dest, ec);
  if (ec) return InvalidArgument("cannot rename '" + part + "' to '" + dest + "': " + ec.message());
  return dest;
}

}  // namespace lockstep::client
