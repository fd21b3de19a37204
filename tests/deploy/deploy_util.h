// Helpers of the scale-out tests: deploy/run_replicas.sh run as a child process group (N `lockstep serve`
// replicas of stories260K and nginx in front, on loopback), the replicas' metrics, nginx's access log, and
// the test model. Test-only; each object is used by one thread.
#pragma once

#include <string>
#include <vector>

namespace lockstep::deploy::testing {

// The nginx binary, or "" when it is not installed.
std::string NginxBinary();
// A TCP port that was free a moment ago on 127.0.0.1.
int FreePort();
// ../shared/testdata/models/stories260K.gguf ("" when the test data is absent).
std::string StoriesModel();

class ReplicaSet {
 public:
  // Runs deploy/run_replicas.sh -m model -n replicas --port <free> --dir <temp> <script_args> -- <serve_args>
  // and waits (up to 60 s) for its "ready" line.
  ReplicaSet(const std::string& model, int replicas, const std::vector<std::string>& script_args,
             const std::vector<std::string>& serve_args);
  ~ReplicaSet();  // SIGTERM to the script (it drains and stops everything), SIGKILL to the group after 30 s
  bool ok() const { return ok_; }
  std::string output() const;  // the script's output and, on failure, the replicas' logs
  std::string url() const { return "http://127.0.0.1:" + std::to_string(nginx_port_) + "/v1"; }
  int size() const { return static_cast<int>(ports_.size()); }
  int port(int i) const { return ports_[i]; }
  int pid(int i) const { return pids_[i]; }
  std::string replica_log(int i) const;
  // The API requests nginx logged (POST lines of access.log): the upstream that answered last and how many
  // upstreams each tried.
  struct Served {
    std::string status;
    std::vector<std::string> upstreams;  // "127.0.0.1:PORT" in the order nginx tried them
  };
  std::vector<Served> AccessLog() const;
  const std::string& dir() const { return dir_; }

 private:
  int script_pid_ = -1;
  int group_ = -1;  // the script's process group
  int nginx_port_ = 0;
  bool ok_ = false;
  std::string dir_;
  std::vector<int> ports_;
  std::vector<int> pids_;
};

// Generations a replica finished (its lockstep_e2e_request_latency_seconds count); -1 when unreachable.
double FinishedRequests(int port);

// Reads a whole file ("" when missing).
std::string ReadFile(const std::string& path);

}  // namespace lockstep::deploy::testing
