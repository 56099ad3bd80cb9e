// A test backend that hands every call to a FakeBackend; a test derives from it and overrides only what
// it probes (Generate, ...).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "server/fake_backend.h"

namespace ember::server {

class ForwardingBackend : public InferenceBackend {
 public:
  explicit ForwardingBackend(FakeBackend::Options o = {}) : fake_(o) {}
  FakeBackend& fake() { return fake_; }

  std::string model_id() const override { return fake_.model_id(); }
  int32_t context_length() const override { return fake_.context_length(); }
  size_t max_token_bytes() const override { return fake_.max_token_bytes(); }
  StatusOr<std::vector<int32_t>> Tokenize(const std::string& t, bool a, bool p) const override {
    return fake_.Tokenize(t, a, p);
  }
  StatusOr<std::string> Detokenize(const std::vector<int32_t>& ids) const override { return fake_.Detokenize(ids); }
  StatusOr<std::vector<int32_t>> TokenizeChat(const ChatTemplateInput& in) const override {
    return fake_.TokenizeChat(in);
  }
  StatusOr<std::string> ApplyChatTemplate(const ChatTemplateInput& in) const override {
    return fake_.ApplyChatTemplate(in);
  }
  Status Generate(const GenerationRequest& req, const TokenCallback& on_token, GenerationResult* out) override {
    return fake_.Generate(req, on_token, out);
  }
  BackendStats Stats() const override { return fake_.Stats(); }
  Status FlushCache() override { return fake_.FlushCache(); }
  int max_parallel() const override { return fake_.max_parallel(); }
  Status CheckAdmissible(const GenerationRequest& req) const override { return fake_.CheckAdmissible(req); }
  MemoryWaits memory_waits() const override { return fake_.memory_waits(); }

 protected:
  FakeBackend fake_;
};

}  // namespace ember::server
