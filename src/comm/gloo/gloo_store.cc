// gloo::rendezvous::Store over a zerotrain Store (Status -> exception edge).
#include "comm/gloo/gloo_store.h"

#include <gloo/common/error.h>

namespace zerotrain::comm {
namespace {

void throw_if_error(const Status& status) {
  if (!status.ok()) throw gloo::IoException(status.to_string());
}

}  // namespace

void GlooStoreAdapter::set(const std::string& key, const std::vector<char>& data) {
  throw_if_error(store_.set(prefix_ + key, std::string(data.begin(), data.end())));
}

std::vector<char> GlooStoreAdapter::get(const std::string& key) {
  StatusOr<std::string> value = store_.get(prefix_ + key, timeout_);
  throw_if_error(value.status());
  return std::vector<char>(value->begin(), value->end());
}

void GlooStoreAdapter::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void GlooStoreAdapter::wait(const std::vector<std::string>& keys,
                            const std::chrono::milliseconds& timeout) {
  std::vector<std::string> full;
  full.reserve(keys.size());
  for (const std::string& k : keys) full.push_back(prefix_ + k);
  throw_if_error(store_.wait(full, timeout));
}

}  // namespace zerotrain::comm
