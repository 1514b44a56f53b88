// Named note "comm staging": how a collective's buffers reach a backend's
// do_* hooks when they are not in the memory those hooks move.
//
// A backend's hooks move one kind of memory (Communicator::hook_device()):
// host memory (Gloo), or one device's memory as raw device pointers (NCCL).
// A caller's buffer of the other kind is staged. On the communication
// thread, inside the collective's task (so async forms stage there too),
// the buffers the collective reads are copied into staging memory of the
// hooks' kind with Device::copy, the hook runs on the staging copies, and
// the buffers it writes are copied back. Ordering: Device::copy runs on the
// device's compute stream and, with host memory on one side, returns once
// the bytes have arrived ("device streams"). So the copy in is ordered
// after every kernel the caller enqueued before it submitted the
// collective (the bytes read are final; also after whatever it enqueued
// since, which costs overlap, not correctness), and the copy back has landed
// before the Work completes, so whatever the caller orders after wait()
// sees the result. Staging host memory is a scratch area the communicator
// keeps and reuses (its high-water mark stays allocated; pageable, so a
// GPU copy goes at pageable speed: the path is the fallback for ranks that
// share a GPU, not the fast path); staging device memory is allocated from
// the hook device for the one collective (kBuffers) and freed after it.
//
// A buffer that lies inside another one of the same collective (in-place
// reduce_scatter: the output is the input's chunk `rank`; in-place
// allgather: the input is the output's chunk) is staged as the same slice
// of the other's staging copy, so the hook sees the same in-place layout.
//
//   ZT_ASSIGN_OR_RETURN(StagedBuffers s, StagedBuffers::plan("allreduce",
//       {{CommBuffer::of(t), /*read=*/true, /*write=*/true}}, hook_device));
//   ZT_RETURN_IF_ERROR(s.stage_in(host_scratch));  // communication thread
//   ZT_RETURN_IF_ERROR(hook(s.span(0)));
//   ZT_RETURN_IF_ERROR(s.stage_out());
//
// Thread-safety: plan() on any thread; the rest on one thread at a time
// (the communication thread).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "device/device.h"

namespace zerotrain::comm {

// A caller's buffer: `bytes` at `data`, in `device`'s memory (null: host
// memory). Inputs are const-cast: staging never writes a buffer it only
// reads.
struct CommBuffer {
  void* data = nullptr;
  size_t bytes = 0;
  device::Device* device = nullptr;

  static CommBuffer of(const ConstTensor& t) {
    return {const_cast<void*>(t.data), t.size_bytes(), t.device};
  }
  static CommBuffer host(std::span<const std::byte> s) {
    return {const_cast<std::byte*>(s.data()), s.size(), nullptr};
  }
};

class StagedBuffers {
 public:
  struct Use {
    CommBuffer buffer;
    bool read = false;   // the collective reads it: copied in when staged
    bool write = false;  // the collective writes it: copied back when staged
  };

  // How each buffer reaches hooks that move `hook_device`'s memory (null:
  // host memory); decides only, copies nothing. InvalidArgument naming `op`
  // for a buffer neither direct nor stageable (another device's memory the
  // host cannot address, for a device backend).
  static StatusOr<StagedBuffers> plan(const char* op, std::vector<Use> uses,
                                      device::Device* hook_device);

  // Whether any buffer is staged.
  bool staged() const;
  // Allocates the staging memory (host: `host_scratch`, grown as needed)
  // and copies the read buffers in.
  Status stage_in(std::vector<std::byte>& host_scratch);
  // Buffer i as the hooks take it (after stage_in).
  std::span<std::byte> span(size_t i) const {
    return {entries_[i].hook, entries_[i].use.buffer.bytes};
  }
  // Copies the written buffers back.
  Status stage_out();

 private:
  struct Entry {
    Use use;
    std::byte* hook = nullptr;  // what the hooks get (direct address or staging)
    bool staged = false;
    void* caller = nullptr;            // the caller's bytes as `copier` addresses them
    device::Device* copier = nullptr;  // whose copy() moves them
    int container = -1;                // staged as a slice of entry `container`
    size_t offset = 0;                 // ... at this byte offset
  };
  Status copy(const Entry& e, bool in) const;

  const char* op_ = "";
  device::Device* hook_device_ = nullptr;
  std::vector<Entry> entries_;
  device::Buffer device_staging_;  // staging in hook_device_'s memory
};

}  // namespace zerotrain::comm
