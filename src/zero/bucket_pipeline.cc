// Staging slots and in-flight bucket collectives (see bucket_pipeline.h).
#include "zero/bucket_pipeline.h"

#include <string>
#include <utility>

namespace zerotrain::zero {

StatusOr<BucketPipeline> BucketPipeline::create(device::Device& device, int64_t slot_floats,
                                                int slots) {
  if (slots != 1 && slots != 2)
    return invalid_argument("BucketPipeline: 1 or 2 staging slots, got " + std::to_string(slots));
  if (slot_floats < 0) return invalid_argument("BucketPipeline: negative slot size");
  BucketPipeline p;
  p.slot_floats_ = slot_floats;
  p.slots_.resize(static_cast<size_t>(slots));
  for (Slot& s : p.slots_) {
    if (slot_floats == 0) continue;  // in-place collectives only: order, no buffer
    ZT_ASSIGN_OR_RETURN(s.buffer,
                        device.allocate(static_cast<size_t>(slot_floats) * sizeof(float),
                                        device::MemoryCategory::kBuffers, "bucket staging"));
  }
  return p;
}

BucketPipeline& BucketPipeline::operator=(BucketPipeline&& other) noexcept {
  if (this != &other) {
    wait_all();
    slots_ = std::move(other.slots_);
    slot_floats_ = other.slot_floats_;
    next_ = other.next_;
    last_ = other.last_;
  }
  return *this;
}

BucketPipeline::~BucketPipeline() { wait_all(); }

void BucketPipeline::wait_all() noexcept {
  for (Slot& s : slots_)
    if (s.work != nullptr) (void)std::exchange(s.work, nullptr)->wait();
}

Status BucketPipeline::complete(Slot& s) {
  if (s.work == nullptr) return Status();
  comm::WorkPtr work = std::exchange(s.work, nullptr);
  std::function<Status()> finish = std::exchange(s.finish, nullptr);
  ZT_RETURN_IF_ERROR(work->wait());
  return finish ? finish() : Status();
}

StatusOr<Tensor> BucketPipeline::next_slot() {
  ZT_CHECK(!slots_.empty(), "BucketPipeline::next_slot without staging");
  Slot& s = slots_[next_];
  ZT_RETURN_IF_ERROR(complete(s));
  last_ = next_;
  next_ = (next_ + 1) % slots_.size();
  return s.buffer.tensor(DType::kFloat32);
}

Status BucketPipeline::submit(comm::WorkPtr work, std::function<Status()> finish) {
  ZT_CHECK(!slots_.empty() && slots_[last_].work == nullptr,
           "BucketPipeline::submit without a free slot from next_slot()");
  Slot& s = slots_[last_];
  s.work = std::move(work);
  s.finish = std::move(finish);
  return slots_.size() == 1 ? complete(s) : Status();
}

Status BucketPipeline::drain() {
  Status first;
  // Oldest first: the slot after the last one handed out.
  for (size_t i = 1; i <= slots_.size(); ++i) {
    Status st = complete(slots_[(last_ + i) % slots_.size()]);
    if (first.ok() && !st.ok()) first = st;
  }
  return first;
}

bool BucketPipeline::idle() const {
  for (const Slot& s : slots_)
    if (s.work != nullptr) return false;
  return true;
}

bool BucketPipeline::next_slot_ready() const {
  if (slots_.empty()) return false;
  const Slot& s = slots_[next_];
  return s.work == nullptr || s.work->is_completed();
}

int64_t BucketPipeline::bytes() const {
  return static_cast<int64_t>(slots_.size()) * slot_floats_ * static_cast<int64_t>(sizeof(float));
}

}  // namespace zerotrain::zero
