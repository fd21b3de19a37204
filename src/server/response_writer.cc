// ResponseWriter helpers that wrap another writer (http_server.h).
#include "server/http_server.h"

namespace lockstep::server {

namespace {

class HeaderAddingWriter : public ResponseWriter {
 public:
  HeaderAddingWriter(std::shared_ptr<ResponseWriter> inner, HeaderList extra)
      : inner_(std::move(inner)), extra_(std::move(extra)) {}
  void Send(int status, const std::string& content_type, std::string body, HeaderList headers) override {
    headers.insert(headers.end(), extra_.begin(), extra_.end());
    inner_->Send(status, content_type, std::move(body), std::move(headers));
  }
  void StartStream(int status, const std::string& content_type, HeaderList headers) override {
    headers.insert(headers.end(), extra_.begin(), extra_.end());
    inner_->StartStream(status, content_type, std::move(headers));
  }
  void Write(std::string data) override { inner_->Write(std::move(data)); }
  void End() override { inner_->End(); }
  void Post(std::function<void()> fn) override { inner_->Post(std::move(fn)); }
  std::function<void()> PostAfter(double seconds, std::function<void()> fn) override {
    return inner_->PostAfter(seconds, std::move(fn));
  }
  void OnClose(std::function<void()> fn) override { inner_->OnClose(std::move(fn)); }
  bool closed() const override { return inner_->closed(); }

 private:
  std::shared_ptr<ResponseWriter> inner_;
  HeaderList extra_;
};

}  // namespace

std::shared_ptr<ResponseWriter> WithHeaders(std::shared_ptr<ResponseWriter> writer, HeaderList headers) {
  return std::make_shared<HeaderAddingWriter>(std::move(writer), std::move(headers));
}

}  // namespace lockstep::server
