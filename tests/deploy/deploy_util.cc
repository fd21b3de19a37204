#include "deploy_util.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "test_client.h"
#include "testing/testdata.h"

namespace lockstep::deploy::testing {

using server::testing::MetricValue;
using server::testing::Request;

std::string NginxBinary() {
  std::string out;
  if (::lockstep::testing::RunCommand("command -v nginx 2>/dev/null", &out) == 0 && !out.empty()) {
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
  }
  return access("/usr/sbin/nginx", X_OK) == 0 ? "/usr/sbin/nginx" : "";
}

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

std::string StoriesModel() {
  const std::string dir = ::lockstep::testing::TestDataDir();
  return dir.empty() ? "" : dir + "/models/stories260K.gguf";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ReplicaSet::ReplicaSet(const std::string& model, int replicas, const std::vector<std::string>& script_args,
                       const std::vector<std::string>& serve_args) {
  dir_ = ::lockstep::testing::MakeTempDir("lockstep-replicas");
  nginx_port_ = FreePort();
  std::vector<std::string> args = {"/bin/bash",  std::string(LOCKSTEP_SOURCE_DIR) + "/deploy/run_replicas.sh",
                                   "-m",         model,
                                   "-n",         std::to_string(replicas),
                                   "--port",     std::to_string(nginx_port_),
                                   "--dir",      dir_,
                                   "--lockstep", ::lockstep::testing::LockstepBinary()};
  args.insert(args.end(), script_args.begin(), script_args.end());
  args.push_back("--");
  args.insert(args.end(), serve_args.begin(), serve_args.end());
  const std::string out_path = dir_ + "/script.out";
  script_pid_ = fork();
  if (script_pid_ == 0) {
    setpgid(0, 0);  // its own process group: the destructor can end every process it started
    const int fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  setpgid(script_pid_, script_pid_);
  group_ = script_pid_;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (ReadFile(out_path).find("lockstep replicas: ready") != std::string::npos) break;
    int status = 0;
    if (waitpid(script_pid_, &status, WNOHANG) == script_pid_) {
      script_pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::istringstream tsv(ReadFile(dir_ + "/replicas.tsv"));
  for (int index, pid, port; tsv >> index >> pid >> port;) {
    pids_.push_back(pid);
    ports_.push_back(port);
  }
  ok_ = static_cast<int>(ports_.size()) == replicas;
}

ReplicaSet::~ReplicaSet() {
  if (group_ <= 0) return;
  if (script_pid_ > 0) {
    kill(script_pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 3000 && script_pid_ > 0; ++i) {
      if (waitpid(script_pid_, &status, WNOHANG) == script_pid_) script_pid_ = -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  kill(-group_, SIGKILL);  // whatever of the group is left (nothing, when the script stopped it all)
  if (script_pid_ > 0) waitpid(script_pid_, nullptr, 0);
}

std::string ReplicaSet::output() const {
  std::string out = ReadFile(dir_ + "/script.out");
  if (!ok_) {
    for (int i = 0; i < 8; ++i) {
      const std::string log = ReadFile(dir_ + "/replica-" + std::to_string(i) + ".log");
      if (!log.empty()) out += "\n--- replica " + std::to_string(i) + " ---\n" + log;
    }
    out += "\n--- nginx error.log ---\n" + ReadFile(dir_ + "/error.log");
  }
  return out;
}

std::string ReplicaSet::replica_log(int i) const {
  return ReadFile(dir_ + "/replica-" + std::to_string(i) + ".log");
}

std::vector<ReplicaSet::Served> ReplicaSet::AccessLog() const {
  std::vector<Served> served;
  std::istringstream lines(ReadFile(dir_ + "/access.log"));
  for (std::string line; std::getline(lines, line);) {
    if (line.find("\"POST ") == std::string::npos) continue;
    Served s;
    const size_t q = line.find("\" ", line.find("\"POST "));
    s.status = line.substr(q + 2, 3);
    const size_t up = line.find("upstream=");
    const size_t end = line.find(" upstream_status=");
    std::string list = line.substr(up + 9, end - up - 9);  // "a:1, b:2"
    for (size_t pos = 0; pos < list.size();) {
      size_t comma = list.find(", ", pos);
      if (comma == std::string::npos) comma = list.size();
      s.upstreams.push_back(list.substr(pos, comma - pos));
      pos = comma + 2;
    }
    served.push_back(std::move(s));
  }
  return served;
}

double FinishedRequests(int port) {
  const auto r = Request(port, "GET", "/metrics");
  if (r.status != 200) return -1;
  return MetricValue(r.body, "lockstep_e2e_request_latency_seconds_count");
}

}  // namespace lockstep::deploy::testing
