// GlooStoreAdapter: lets gloo's rendezvous (connectFullMesh) run over a
// zerotrain Store. Keys are namespaced under `prefix`. gloo expects store
// failures as exceptions, so each failed Status is thrown as
// gloo::IoException carrying the Status text; the communicator catches it
// at its edge and turns it back into a Status.
//
//   GlooStoreAdapter adapter(store, "zt/default/gloo/", timeout);
//   context->connectFullMesh(adapter, device);  // inside a try block
//
// Thread-safety: as the wrapped Store.
#pragma once

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <string>
#include <vector>

#include "comm/store/store.h"

namespace zerotrain::comm {

class GlooStoreAdapter final : public gloo::rendezvous::Store {
 public:
  GlooStoreAdapter(comm::Store& store, std::string prefix, std::chrono::milliseconds timeout)
      : store_(store), prefix_(std::move(prefix)), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  comm::Store& store_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
};

}  // namespace zerotrain::comm
