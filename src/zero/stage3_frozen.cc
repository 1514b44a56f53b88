// ZeRO stage 3's share of LoRA's frozen base (model/adapters.h): each
// group's frozen block is partitioned over the ranks like its trainable
// parameters and gathered with them around each stage (see
// stage3_strategy.h). A block is bytes (fp32 tensors and 4-bit weights); it
// travels as floats, which the all-gather copies bit for bit and nothing
// computes with, padded to a multiple of N floats.
#include <algorithm>
#include <vector>

#include "model/adapters.h"
#include "zero/stage3_strategy.h"

namespace zerotrain::zero {

using device::MemoryCategory;

Status Stage3Strategy::allocate_frozen() {
  model::Module& m = *model_;
  const int groups = m.num_groups();
  frozen_at_.assign(static_cast<size_t>(groups), 0);
  frozen_chunk_.assign(static_cast<size_t>(groups), 0);
  int64_t total = 0;
  for (int g = 0; g < groups; ++g) {
    frozen_at_[static_cast<size_t>(g)] = total;
    frozen_chunk_[static_cast<size_t>(g)] =
        model::frozen_chunk_floats(m.frozen_group_bytes(g), world());
    total += frozen_chunk_[static_cast<size_t>(g)];
  }
  if (total == 0) return Status();
  ZT_ASSIGN_OR_RETURN(
      frozen_part_, PartitionArray::allocate(device(), DType::kFloat32, static_cast<size_t>(total),
                                             {.host = options_.offload_param,
                                              .pin = options_.pin_param_memory,
                                              .category = MemoryCategory::kParameters},
                                             "frozen base partition"));
  // A base loaded before the strategy (init_parameters): keep this rank's
  // chunks; release_owned_buffers() then frees the module's whole blocks.
  for (int g = 0; g < groups; ++g)
    if (const uint8_t* block = m.group_frozen(g))
      ZT_RETURN_IF_ERROR(
          keep_frozen_chunk(g, frozen_floats(block, m.frozen_group_bytes(g), &device())));
  return Status();
}

ConstTensor Stage3Strategy::frozen_floats(const uint8_t* block, int64_t bytes, device::Device* on) {
  ZT_CHECK(bytes % 4 == 0, "a frozen block of ", bytes, " bytes is not whole floats");
  return ConstTensor(reinterpret_cast<const float*>(block), DType::kFloat32,
                     static_cast<size_t>(bytes / 4), on);
}

// The padding past the block's end stays as allocated: zero.
Status Stage3Strategy::keep_frozen_chunk(int g, ConstTensor block) {
  const auto chunk = static_cast<size_t>(frozen_chunk_[static_cast<size_t>(g)]);
  const size_t begin = std::min(block.numel, static_cast<size_t>(rank()) * chunk),
               end = std::min(block.numel, begin + chunk);
  if (end == begin) return Status();
  return device::copy(block.slice(begin, end - begin), frozen_chunk(g).slice(0, end - begin));
}

Tensor Stage3Strategy::frozen_chunk(int g) const {
  return frozen_part_.slice(static_cast<size_t>(frozen_at_[static_cast<size_t>(g)]),
                            static_cast<size_t>(frozen_chunk_[static_cast<size_t>(g)]));
}

Status Stage3Strategy::load_frozen(model::Module& m, const model::ReadFlatFn& read) {
  ZT_RETURN_IF_ERROR(coordinator_.release_all());
  return m.load_frozen(read, [this](int g, std::span<const uint8_t> block) {
    return keep_frozen_chunk(g, frozen_floats(block.data(), static_cast<int64_t>(block.size()),
                                              nullptr));  // host memory
  });
}

// This rank's chunk into its slot of an N-chunk buffer, then the
// all-gather in place; with one rank on the device the partition is bound
// as it is (no buffer).
Status Stage3Strategy::issue_frozen_gather(int g, device::Buffer* all_buf, comm::WorkPtr* work) {
  const auto chunk = static_cast<size_t>(frozen_chunk_[static_cast<size_t>(g)]);
  if (chunk == 0 || (world() == 1 && !frozen_part_.on_host())) return Status();
  ZT_ASSIGN_OR_RETURN(*all_buf, pool_.acquire(chunk * static_cast<size_t>(world()) * 4));
  const Tensor all = all_buf->tensor(DType::kFloat32);
  const Tensor mine = all.slice(static_cast<size_t>(rank()) * chunk, chunk);
  ZT_RETURN_IF_ERROR(device::copy(frozen_chunk(g), mine));
  if (world() == 1) return Status();
  *work = comm_->allgather_async(mine, all);
  if (options_.overlap_comm) return Status();
  Status s = (*work)->wait();
  work->reset();
  return s;
}

Status Stage3Strategy::finish_frozen_gather(int g) {
  GroupBuffers& b = buffers_[static_cast<size_t>(g)];
  if (b.frozen_gather) {
    Status s = b.frozen_gather->wait();
    b.frozen_gather.reset();
    ZT_RETURN_IF_ERROR(s);
  }
  if (frozen_chunk_[static_cast<size_t>(g)] == 0) return Status();
  const void* block = b.frozen.empty() ? frozen_chunk(g).data : b.frozen.data();
  model_->set_group_frozen(g, static_cast<const uint8_t*>(block));
  return Status();
}

void Stage3Strategy::release_frozen(int g) {
  if (frozen_chunk_[static_cast<size_t>(g)] == 0) return;
  model_->set_group_frozen(g, nullptr);
  pool_.release(std::move(buffers_[static_cast<size_t>(g)].frozen));
}

int64_t Stage3Strategy::frozen_bytes() const {
  return frozen_part_.on_host() ? 0 : frozen_part_.size_bytes();
}

int64_t Stage3Strategy::host_frozen_bytes() const {
  return frozen_part_.on_host() ? frozen_part_.size_bytes() : 0;
}

}  // namespace zerotrain::zero
