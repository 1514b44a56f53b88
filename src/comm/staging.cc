// Comm staging (see staging.h, named note "comm staging").
#include "comm/staging.h"

#include <string>

namespace zerotrain::comm {
namespace {

constexpr size_t kAlign = 64;  // each staged buffer starts on its own cache line

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

bool inside(const CommBuffer& inner, const CommBuffer& outer) {
  auto i = reinterpret_cast<uintptr_t>(inner.data), o = reinterpret_cast<uintptr_t>(outer.data);
  return inner.device == outer.device && o <= i && i + inner.bytes <= o + outer.bytes;
}

std::string memory_name(const device::Device* d) {
  return d ? d->name() + " memory" : "host memory";
}

}  // namespace

StatusOr<StagedBuffers> StagedBuffers::plan(const char* op, std::vector<Use> uses,
                                            device::Device* hook_device) {
  StagedBuffers s;
  s.op_ = op;
  s.hook_device_ = hook_device;
  for (const Use& u : uses) {
    Entry e;
    e.use = u;
    const CommBuffer& b = u.buffer;
    e.hook = static_cast<std::byte*>(b.data);
    if (b.bytes == 0 || b.device == hook_device) {
      // Already the hooks' memory (or nothing to move).
    } else if (hook_device == nullptr) {
      // Host hooks: a device's memory through its host address, else staged.
      void* host = b.device->host_address(b.data);
      if (host != nullptr) {
        e.hook = static_cast<std::byte*>(host);
      } else {
        e.staged = true;
        e.caller = b.data;
        e.copier = b.device;
      }
    } else {
      // Device hooks: host memory (or host-addressable memory) is staged in.
      void* host = b.device == nullptr ? b.data : b.device->host_address(b.data);
      if (host == nullptr)
        return invalid_argument(std::string(op) + ": the tensor is in " + memory_name(b.device) +
                                ", which this communicator cannot reach (it moves " +
                                memory_name(hook_device) + " and host memory)");
      e.staged = true;
      e.caller = host;
      e.copier = hook_device;
    }
    s.entries_.push_back(e);
  }
  // A staged buffer inside another staged one becomes a slice of its copy
  // (equal ranges: the first one holds the copy).
  for (size_t j = 0; j < s.entries_.size(); ++j) {
    Entry& inner = s.entries_[j];
    if (!inner.staged) continue;
    for (size_t i = 0; i < s.entries_.size(); ++i) {
      const Entry& outer = s.entries_[i];
      if (i == j || !outer.staged || outer.container >= 0) continue;
      if (!inside(inner.use.buffer, outer.use.buffer)) continue;
      if (inside(outer.use.buffer, inner.use.buffer) && i > j)
        continue;  // equal: lower index holds
      inner.container = static_cast<int>(i);
      inner.offset = static_cast<size_t>(static_cast<std::byte*>(inner.use.buffer.data) -
                                         static_cast<std::byte*>(outer.use.buffer.data));
      break;
    }
  }
  return s;
}

bool StagedBuffers::staged() const {
  for (const Entry& e : entries_)
    if (e.staged) return true;
  return false;
}

Status StagedBuffers::stage_in(std::vector<std::byte>& host_scratch) {
  if (!staged()) return ok_status();
  size_t total = 0;
  std::vector<size_t> at(entries_.size(), 0);
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (!entries_[i].staged || entries_[i].container >= 0) continue;
    at[i] = total;
    total += align_up(entries_[i].use.buffer.bytes);
  }
  std::byte* base = nullptr;
  if (hook_device_ == nullptr) {
    if (host_scratch.size() < total) host_scratch.resize(total);
    base = host_scratch.data();
  } else {
    ZT_ASSIGN_OR_RETURN(
        device_staging_,
        hook_device_->allocate(total, device::MemoryCategory::kBuffers, "communicator staging"));
    base = static_cast<std::byte*>(device_staging_.data());
  }
  for (size_t i = 0; i < entries_.size(); ++i) {
    Entry& e = entries_[i];
    if (e.staged && e.container < 0) e.hook = base + at[i];
  }
  for (Entry& e : entries_)
    if (e.staged && e.container >= 0) e.hook = entries_[e.container].hook + e.offset;
  // Read buffers in; a slice whose holder is read in whole needs no copy.
  for (const Entry& e : entries_) {
    if (!e.staged || !e.use.read) continue;
    if (e.container >= 0 && entries_[e.container].use.read) continue;
    ZT_RETURN_IF_ERROR(copy(e, /*in=*/true));
  }
  return ok_status();
}

Status StagedBuffers::stage_out() {
  for (const Entry& e : entries_) {
    if (!e.staged || !e.use.write) continue;
    if (e.container >= 0 && entries_[e.container].use.write) continue;
    ZT_RETURN_IF_ERROR(copy(e, /*in=*/false));
  }
  device_staging_.reset();
  return ok_status();
}

Status StagedBuffers::copy(const Entry& e, bool in) const {
  const size_t n = e.use.buffer.bytes;
  Status st = in ? e.copier->copy(e.hook, e.caller, n) : e.copier->copy(e.caller, e.hook, n);
  if (st.ok()) return st;
  return st.with_context(std::string(op_) + ": staging " + std::to_string(n) + " bytes " +
                         (in ? "in from " : "back to ") + memory_name(e.use.buffer.device));
}

}  // namespace zerotrain::comm
