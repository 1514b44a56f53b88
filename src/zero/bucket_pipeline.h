// BucketPipeline: the staging buffers of ZeRO's bucket collectives and the
// collectives in flight on them. With one slot every collective completes
// before the caller goes on (overlap_comm false: inline). With two slots
// (overlap_comm true, DeepSpeed's double-buffered ipg buffers, each one
// reduce bucket) a collective runs on the Communicator's thread while the
// caller fills the other slot — or computes: stage 2 launches buckets from
// the backward hooks and backward continues.
//
//   ZT_ASSIGN_OR_RETURN(Tensor slot, pipe.next_slot());   // fp32, device; may finish an older one
//   ... fill slot ...
//   ZT_RETURN_IF_ERROR(pipe.submit(comm->reduce_scatter_async(...), [=] { use(slot); }));
//   ZT_RETURN_IF_ERROR(pipe.drain());                                // all finished
//
// Each collective's `finish` runs on the caller's thread once its Work has
// completed, in submission order (slots are reused round robin), so
// results do not depend on the slot count: overlap on and off compute the
// same floats. Thread-safety: one owner; the Communicator serialises the
// collectives themselves.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "core/status.h"
#include "core/tensor.h"
#include "device/device.h"

namespace zerotrain::zero {

class BucketPipeline {
 public:
  BucketPipeline() = default;
  BucketPipeline(BucketPipeline&&) = default;
  BucketPipeline& operator=(BucketPipeline&& other) noexcept;
  // Waits for anything still in flight (an error path left it running):
  // the communication thread must not write into freed staging.
  ~BucketPipeline();
  // `slots` (1 or 2) device buffers of slot_floats each (0: empty buffers,
  // for collectives that all run in place and only need the ordering).
  static StatusOr<BucketPipeline> create(device::Device& device, int64_t slot_floats, int slots);

  int slots() const { return static_cast<int>(slots_.size()); }
  int64_t slot_floats() const { return slot_floats_; }
  // The next slot's whole buffer (fp32, device memory); first completes the
  // collective that used it last (its wait, then its finish). Errors are
  // the collective's.
  StatusOr<Tensor> next_slot();
  // The collective now using the slot next_slot() returned. One slot:
  // waits and finishes at once.
  Status submit(comm::WorkPtr work, std::function<Status()> finish);
  // Completes every collective in flight, oldest first; the first error is
  // returned after all have been waited for (none is left running on a
  // buffer that may go away).
  Status drain();
  bool idle() const;
  // next_slot() would not block: its slot is free or its collective is done.
  bool next_slot_ready() const;
  int64_t bytes() const;  // staging held: slots * slot_floats * 4

 private:
  struct Slot {
    device::Buffer buffer;
    comm::WorkPtr work;  // null: free
    std::function<Status()> finish;
  };
  Status complete(Slot& s);
  void wait_all() noexcept;

  std::vector<Slot> slots_;
  int64_t slot_floats_ = 0;
  size_t next_ = 0;  // the slot next_slot() hands out
  size_t last_ = 0;  // the slot handed out last, which submit() fills
};

}  // namespace zerotrain::zero
