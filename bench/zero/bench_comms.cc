// Recording, null and replayed collectives (see bench_comms.h).
#include "bench_comms.h"

#include <algorithm>
#include <cstring>

namespace zerotrain::bench {

RecordingCommunicator::RecordingCommunicator(comm::Communicator* inner)
    : comm::Communicator(inner->rank(), inner->world_size(), inner->timeout()), inner_(inner) {}

RecordingCommunicator::~RecordingCommunicator() { shutdown(); }

void RecordingCommunicator::start_recording() {
  std::lock_guard<std::mutex> lock(mu_);
  ops_.clear();
  recording_ = true;
}

std::vector<RecordedOp> RecordingCommunicator::stop_recording() {
  std::lock_guard<std::mutex> lock(mu_);
  recording_ = false;
  return std::move(ops_);
}

void RecordingCommunicator::note(const RecordedOp& op) {
  std::lock_guard<std::mutex> lock(mu_);
  if (recording_) ops_.push_back(op);
}

Status RecordingCommunicator::do_allreduce(std::span<std::byte> data, comm::DType dtype,
                                           comm::ReduceOp op) {
  note({.type = comm::OpType::kAllreduce, .input_bytes = data.size(), .dtype = dtype,
        .reduce = op});
  return inner_->allreduce(data, dtype, op);
}

Status RecordingCommunicator::do_reduce_scatter(std::span<const std::byte> input,
                                                std::span<std::byte> output, comm::DType dtype,
                                                comm::ReduceOp op) {
  note({.type = comm::OpType::kReduceScatter, .input_bytes = input.size(),
        .output_bytes = output.size(), .dtype = dtype, .reduce = op});
  return inner_->reduce_scatter(input, output, dtype, op);
}

Status RecordingCommunicator::do_allgather(std::span<const std::byte> input,
                                           std::span<std::byte> output) {
  note({.type = comm::OpType::kAllgather, .input_bytes = input.size(),
        .output_bytes = output.size()});
  return inner_->allgather(input, output);
}

Status RecordingCommunicator::do_broadcast(std::span<std::byte> data, int root) {
  note({.type = comm::OpType::kBroadcast, .input_bytes = data.size(), .root = root});
  return inner_->broadcast(data, root);
}

Status RecordingCommunicator::do_barrier() {
  note({.type = comm::OpType::kBarrier});
  return inner_->barrier();
}

NullCommunicator::NullCommunicator(int rank, int world)
    : comm::Communicator(rank, world, std::chrono::milliseconds(30000)) {}

NullCommunicator::~NullCommunicator() { shutdown(); }

Status NullCommunicator::do_reduce_scatter(std::span<const std::byte> in,
                                           std::span<std::byte> out, comm::DType,
                                           comm::ReduceOp) {
  const std::byte* mine = in.data() + static_cast<size_t>(rank()) * out.size();
  if (mine != out.data() && !out.empty()) std::memmove(out.data(), mine, out.size());
  return {};
}

Status NullCommunicator::do_allgather(std::span<const std::byte> in, std::span<std::byte> out) {
  for (size_t off = 0; off + in.size() <= out.size() && !in.empty(); off += in.size())
    if (out.data() + off != in.data()) std::memmove(out.data() + off, in.data(), in.size());
  return {};
}

Status replay_collectives(const std::vector<RecordedOp>& ops, comm::Communicator* comm) {
  size_t most = 0;
  for (const RecordedOp& op : ops) most = std::max({most, op.input_bytes, op.output_bytes});
  std::vector<std::byte> in(most), out(most);
  for (const RecordedOp& op : ops) {
    std::span<std::byte> a(in.data(), op.input_bytes), b(out.data(), op.output_bytes);
    switch (op.type) {
      case comm::OpType::kAllreduce:
        ZT_RETURN_IF_ERROR(comm->allreduce(a, op.dtype, op.reduce));
        break;
      case comm::OpType::kReduceScatter:
        ZT_RETURN_IF_ERROR(comm->reduce_scatter(a, b, op.dtype, op.reduce));
        break;
      case comm::OpType::kAllgather:
        ZT_RETURN_IF_ERROR(comm->allgather(a, b));
        break;
      case comm::OpType::kBroadcast:
        ZT_RETURN_IF_ERROR(comm->broadcast(a, op.root));
        break;
      case comm::OpType::kBarrier:
        ZT_RETURN_IF_ERROR(comm->barrier());
        break;
    }
  }
  return Status();
}

}  // namespace zerotrain::bench
