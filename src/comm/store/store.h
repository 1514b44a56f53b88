// Store: the small key-value interface rendezvous runs on (set, get, add,
// wait, missing_keys, erase), plus MemoryStore, an in-process implementation
// for unit tests and single-process groups. The TCP implementation is in
// comm/store/tcp_store.h. Values are binary-safe std::strings; add() keeps its
// counter as decimal text, so get() of a counter returns e.g. "3".
//
//   MemoryStore store;
//   ZT_RETURN_IF_ERROR(store.set("rank/1", "here"));
//   ZT_RETURN_IF_ERROR(store.wait({"rank/0", "rank/1"}, std::chrono::seconds(30)));
//
// Thread-safety: every Store method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace zerotrain::comm {

class Store {
 public:
  virtual ~Store() = default;

  virtual Status set(const std::string& key, const std::string& value) = 0;
  // Waits up to `timeout` for `key` to exist, then returns its value;
  // Timeout naming the key otherwise.
  virtual StatusOr<std::string> get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  // Atomically adds `delta` to the integer at `key` (absent counts as 0) and
  // returns the new value; InvalidArgument if the value is not an integer.
  virtual StatusOr<int64_t> add(const std::string& key, int64_t delta) = 0;
  // Waits until every key exists; Timeout listing the missing keys otherwise.
  virtual Status wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  // The subset of `keys` that does not exist now (empty: all present).
  virtual StatusOr<std::vector<std::string>> missing_keys(const std::vector<std::string>& keys) = 0;
  // Removes `key`; returns whether it existed.
  virtual StatusOr<bool> erase(const std::string& key) = 0;
  // "127.0.0.1:29500" or "memory": for error messages.
  virtual std::string address() const = 0;
};

// Shared semantics of MemoryStore and the TCP server's table, so both
// implementations behave identically. Not thread-safe by itself.
class KeyValueTable {
 public:
  void set(const std::string& key, std::string value) { map_[key] = std::move(value); }
  const std::string* find(const std::string& key) const;
  StatusOr<int64_t> add(const std::string& key, int64_t delta);
  std::vector<std::string> missing(const std::vector<std::string>& keys) const;
  bool erase(const std::string& key) { return map_.erase(key) > 0; }

 private:
  std::map<std::string, std::string, std::less<>> map_;
};

// "store wait at ADDR timed out after 3000 ms; missing keys: a, b"
Status store_timeout(std::string_view what, const std::string& address,
                     std::chrono::milliseconds timeout, const std::vector<std::string>& missing);

class MemoryStore final : public Store {
 public:
  Status set(const std::string& key, const std::string& value) override;
  StatusOr<std::string> get(const std::string& key, std::chrono::milliseconds timeout) override;
  StatusOr<int64_t> add(const std::string& key, int64_t delta) override;
  Status wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  StatusOr<std::vector<std::string>> missing_keys(const std::vector<std::string>& keys) override;
  StatusOr<bool> erase(const std::string& key) override;
  std::string address() const override { return "memory"; }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  KeyValueTable table_;
};

}  // namespace zerotrain::comm
