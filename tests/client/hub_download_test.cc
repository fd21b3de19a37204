// `pull` against a local https "hub" (self-signed certificate, redirect to a CDN path, Range support): a
// fresh download, resume from a .part, SHA-256 and size mismatches, and certificate verification. No
// internet.
#include "client/hub_download.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "client/test_server.h"
#include "testing/testdata.h"

namespace lockstep::client {
namespace {

using testing::TestRequest;
using testing::TestResponse;

// A GGUF's magic, then pseudo-random bytes.
std::string MakeData(size_t n) {
  std::string data(n, '\0');
  uint32_t x = 12345;
  for (auto& c : data) c = static_cast<char>((x = x * 1664525u + 1013904223u) >> 24);
  data.replace(0, 4, "GGUF");
  return data;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct FakeHub {
  std::string data;
  std::string sha256;  // advertised in X-Linked-Etag
  // The Content-Range of a 206 reply: "" = the right one; "-" = none at all; anything else is sent as is.
  std::string content_range;
  testing::TestCert cert = testing::MakeSelfSignedCert("localhost", "127.0.0.1");
  std::string dir = lockstep::testing::MakeTempDir("pull");
  std::string ca_file = dir + "/ca.pem";
  std::unique_ptr<testing::TestHttpServer> server;

  explicit FakeHub(std::string body = MakeData(300000)) : data(std::move(body)) {
    std::ofstream(dir + "/blob", std::ios::binary) << data;
    sha256 = *Sha256File(dir + "/blob");
    std::ofstream(ca_file) << cert.cert_pem;
    server = std::make_unique<testing::TestHttpServer>([this](const TestRequest& req) { return Handle(req); },
                                                       &cert);
  }

  TestResponse Handle(const TestRequest& req) {
    TestResponse r;
    if (req.target == "/org/repo/resolve/main/model.gguf") {
      r.status = 302;
      r.headers = {{"Location", "/cdn/blob"},
                   {"X-Linked-Size", std::to_string(data.size())},
                   {"X-Linked-Etag", "\"" + sha256 + "\""}};
      return r;
    }
    if (req.target != "/cdn/blob") {
      r.status = 404;
      r.pieces = {"Entry not found"};
      return r;
    }
    size_t from = 0;
    if (auto it = req.headers.find("range"); it != req.headers.end()) {
      from = std::stoul(it->second.substr(6));
      r.status = 206;
      const std::string right = "bytes " + std::to_string(from) + "-" + std::to_string(data.size() - 1) +
                                "/" + std::to_string(data.size());
      if (content_range != "-")
        r.headers = {{"Content-Range", content_range.empty() ? right : content_range}};
    }
    for (size_t i = from; i < data.size(); i += 65536) r.pieces.push_back(data.substr(i, 65536));
    return r;
  }

  PullOptions Options() const {
    PullOptions o;
    o.endpoint = server->url();
    o.repo_file = "org/repo/model.gguf";
    o.out_dir = dir + "/out";
    o.tls.ca_file = ca_file;
    o.retries = 0;
    return o;
  }
};

TEST(HubDownloadTest, DownloadsFollowingTheRedirectAndChecksSha256) {
  FakeHub hub;
  uint64_t last_done = 0, last_total = 0;
  auto path =
      PullFile(hub.Options(), nullptr, [&](uint64_t d, uint64_t t) { last_done = d, last_total = t; });
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  EXPECT_EQ(*path, hub.dir + "/out/model.gguf");
  EXPECT_EQ(Slurp(*path), hub.data);
  EXPECT_EQ(last_done, hub.data.size());
  EXPECT_EQ(last_total, hub.data.size());
  EXPECT_FALSE(std::filesystem::exists(*path + ".part"));
}

TEST(HubDownloadTest, ResumesFromAPartFile) {
  FakeHub hub;
  std::filesystem::create_directories(hub.dir + "/out");
  std::ofstream(hub.dir + "/out/model.gguf.part", std::ios::binary) << hub.data.substr(0, 100000);
  auto path = PullFile(hub.Options(), nullptr);
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  EXPECT_EQ(Slurp(*path), hub.data);
  bool ranged = false;
  for (const auto& req : hub.server->seen()) {
    if (req.target == "/cdn/blob")
      ranged = req.headers.count("range") && req.headers.at("range") == "bytes=100000-";
  }
  EXPECT_TRUE(ranged) << "the download did not resume with a Range request";
}

TEST(HubDownloadTest, A206WithoutAValidContentRangeIsAnError) {
  for (const std::string range : {"-", "", "bytes", "bytes 100000", "bytes x-y/z", "bytes 100000-5/300000",
                                  "bytes 99999-299999/300000", "bytes 100000-299999/2"}) {
    if (range.empty()) continue;  // the right header: covered by ResumesFromAPartFile
    FakeHub hub;
    hub.content_range = range;
    std::filesystem::create_directories(hub.dir + "/out");
    std::ofstream(hub.dir + "/out/model.gguf.part", std::ios::binary) << hub.data.substr(0, 100000);
    auto path = PullFile(hub.Options(), nullptr);
    ASSERT_FALSE(path.ok()) << range;
    EXPECT_EQ(path.status().code(), StatusCode::kInvalidArgument) << path.status().ToString();
    EXPECT_NE(path.status().message().find("Content-Range"), std::string::npos) << path.status().message();
  }
}

TEST(HubDownloadTest, DetectsASha256MismatchAndRemovesThePart) {
  FakeHub hub;
  hub.sha256 = std::string(64, 'a');
  auto path = PullFile(hub.Options(), nullptr);
  ASSERT_FALSE(path.ok());
  EXPECT_NE(path.status().message().find("sha256 mismatch"), std::string::npos) << path.status().message();
  EXPECT_FALSE(std::filesystem::exists(hub.dir + "/out/model.gguf"));
  EXPECT_FALSE(std::filesystem::exists(hub.dir + "/out/model.gguf.part"));
}

TEST(HubDownloadTest, DetectsACorruptResumedPrefix) {
  FakeHub hub;
  std::filesystem::create_directories(hub.dir + "/out");
  std::ofstream(hub.dir + "/out/model.gguf.part", std::ios::binary) << std::string(5000, 'x');
  auto path = PullFile(hub.Options(), nullptr);
  ASSERT_FALSE(path.ok());
  EXPECT_NE(path.status().message().find("sha256 mismatch"), std::string::npos);
}

// Regression (CLI audit W9): a hub that sent a text file got it saved as model.gguf, exit code 0.
TEST(HubDownloadTest, AFileThatIsNotGgufIsRemovedAndNamesTheUrl) {
  for (const std::string body : {"not gguf\n", "GGU", ""}) {
    FakeHub hub(body);
    auto path = PullFile(hub.Options(), nullptr);
    ASSERT_FALSE(path.ok()) << "body '" << body << "'";
    EXPECT_EQ(path.status().code(), StatusCode::kInvalidArgument) << path.status().ToString();
    EXPECT_NE(path.status().message().find(hub.server->url() + "/org/repo/resolve/main/model.gguf"),
              std::string::npos)
        << path.status().message();
    EXPECT_NE(path.status().message().find("GGUF"), std::string::npos) << path.status().message();
    EXPECT_FALSE(std::filesystem::exists(hub.dir + "/out/model.gguf"));
    EXPECT_FALSE(std::filesystem::exists(hub.dir + "/out/model.gguf.part"));
  }
}

TEST(HubDownloadTest, ErrorsNameTheProblem) {
  FakeHub hub;
  PullOptions o = hub.Options();
  o.repo_file = "org/repo/missing.gguf";
  auto missing = PullFile(o, nullptr);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status().ToString();
  o.repo_file = "just-a-name.gguf";
  EXPECT_EQ(PullFile(o, nullptr).status().code(), StatusCode::kInvalidArgument);
  o = hub.Options();
  o.tls.ca_file = "";  // the self-signed hub is not trusted by the system store
  auto untrusted = PullFile(o, nullptr);
  EXPECT_EQ(untrusted.status().code(), StatusCode::kUnauthenticated) << untrusted.status().ToString();
}

TEST(HubDownloadTest, PullCommandEndToEnd) {
  FakeHub hub;
  std::string out;
  const std::string cmd = lockstep::testing::LockstepBinary() + " pull org/repo/model.gguf -o " + hub.dir +
                          "/cli --endpoint " + hub.server->url() + " --ca-file " + hub.ca_file + " 2>&1";
  ASSERT_EQ(lockstep::testing::RunCommand(cmd, &out), 0) << out;
  EXPECT_EQ(Slurp(hub.dir + "/cli/model.gguf"), hub.data);
  ASSERT_EQ(
      lockstep::testing::RunCommand(lockstep::testing::LockstepBinary() + " pull org/repo/model.gguf -o " +
                                        hub.dir + "/cli2 --endpoint " + hub.server->url() + " 2>&1",
                                    &out),
      1);
  EXPECT_NE(out.find("verification failed"), std::string::npos) << out;
}

}  // namespace
}  // namespace lockstep::client
