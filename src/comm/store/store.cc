// KeyValueTable semantics and the in-memory Store.
#include "comm/store/store.h"

#include <cerrno>
#include <cstdlib>

namespace zerotrain::comm {

const std::string* KeyValueTable::find(const std::string& key) const {
  auto it = map_.find(key);
  return it == map_.end() ? nullptr : &it->second;
}

StatusOr<int64_t> KeyValueTable::add(const std::string& key, int64_t delta) {
  int64_t current = 0;
  if (const std::string* text = find(key)) {
    errno = 0;
    char* end = nullptr;
    long long parsed = std::strtoll(text->c_str(), &end, 10);
    if (text->empty() || *end != '\0' || errno != 0)
      return invalid_argument("store add: value of key '" + key + "' is not an integer");
    current = parsed;
  }
  current += delta;
  map_[key] = std::to_string(current);
  return current;
}

std::vector<std::string> KeyValueTable::missing(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  for (const std::string& k : keys)
    if (map_.find(k) == map_.end()) out.push_back(k);
  return out;
}

Status store_timeout(std::string_view what, const std::string& address,
                     std::chrono::milliseconds timeout, const std::vector<std::string>& missing) {
  std::string keys;
  for (const std::string& k : missing) keys += (keys.empty() ? "" : ", ") + k;
  return timeout_error(std::string(what) + " at " + address + " timed out after " +
                       std::to_string(timeout.count()) + " ms; missing keys: " + keys);
}

Status MemoryStore::set(const std::string& key, const std::string& value) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    table_.set(key, value);
  }
  changed_.notify_all();
  return ok_status();
}

StatusOr<std::string> MemoryStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!changed_.wait_for(lock, timeout, [&] { return table_.find(key) != nullptr; }))
    return store_timeout("store get", address(), timeout, {key});
  return *table_.find(key);
}

StatusOr<int64_t> MemoryStore::add(const std::string& key, int64_t delta) {
  StatusOr<int64_t> result = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    return table_.add(key, delta);
  }();
  changed_.notify_all();
  return result;
}

Status MemoryStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!changed_.wait_for(lock, timeout, [&] { return table_.missing(keys).empty(); }))
    return store_timeout("store wait", address(), timeout, table_.missing(keys));
  return ok_status();
}

StatusOr<std::vector<std::string>> MemoryStore::missing_keys(const std::vector<std::string>& keys) {
  std::lock_guard<std::mutex> lock(mu_);
  return table_.missing(keys);
}

StatusOr<bool> MemoryStore::erase(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  return table_.erase(key);
}

}  // namespace zerotrain::comm
