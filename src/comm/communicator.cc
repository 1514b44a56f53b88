// Communicator front end: argument checks, the ordered communication
// thread with each op's staging (staging.h), Work handles, byte counters,
// and options from the environment.
#include "comm/communicator.h"

#include <algorithm>

#include "core/log.h"
#include "device/device.h"

namespace zerotrain::comm {
namespace {

bool overlaps(const void* a, size_t an, const void* b, size_t bn) {
  auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return an > 0 && bn > 0 && pa < pb + bn && pb < pa + an;
}

Status check_elements(const char* op, size_t bytes, DType dtype) {
  if (bytes % dtype_size(dtype) != 0)
    return invalid_argument(std::string(op) + ": " + std::to_string(bytes) +
                            " bytes is not a whole number of " + std::string(dtype_name(dtype)) +
                            " elements");
  return ok_status();
}

Status check_same_dtype(const char* op, const ConstTensor& a, const ConstTensor& b) {
  if (a.dtype == b.dtype) return ok_status();
  return invalid_argument(std::string(op) + ": input " + std::string(dtype_name(a.dtype)) +
                          ", output " + std::string(dtype_name(b.dtype)));
}

}  // namespace

Status Communicator::allreduce(Tensor data, ReduceOp op) {
  return allreduce_async(data, op)->wait();
}

Status Communicator::reduce_scatter(ConstTensor input, Tensor output, ReduceOp op) {
  return reduce_scatter_async(input, output, op)->wait();
}

Status Communicator::allgather(ConstTensor input, Tensor output) {
  return allgather_async(input, output)->wait();
}

Status Communicator::broadcast(Tensor data, int root) {
  return broadcast_async(data, root)->wait();
}

WorkPtr Communicator::allreduce_async(Tensor data, ReduceOp op) {
  return submit_allreduce(CommBuffer::of(data), data.dtype, op);
}

WorkPtr Communicator::reduce_scatter_async(ConstTensor input, Tensor output, ReduceOp op) {
  Status st = check_same_dtype("reduce_scatter", input, output);
  if (!st.ok()) return failed(st);
  return submit_reduce_scatter(CommBuffer::of(input), CommBuffer::of(output), input.dtype, op);
}

WorkPtr Communicator::allgather_async(ConstTensor input, Tensor output) {
  Status st = check_same_dtype("allgather", input, output);
  if (!st.ok()) return failed(st);
  return submit_allgather(CommBuffer::of(input), CommBuffer::of(output));
}

WorkPtr Communicator::broadcast_async(Tensor data, int root) {
  return submit_broadcast(CommBuffer::of(data), root);
}

Status Work::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (timeout.count() < 0) {
    done_cv_.wait(lock, [&] { return done_; });
  } else if (!done_cv_.wait_for(lock, timeout, [&] { return done_; })) {
    return timeout_error("collective not complete after " + std::to_string(timeout.count()) +
                         " ms of Work::wait (it is still running)");
  }
  return status_;
}

bool Work::is_completed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void Work::complete(Status status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = std::move(status);
    done_ = true;
  }
  done_cv_.notify_all();
}

Communicator::Communicator(int rank, int world_size, std::chrono::milliseconds timeout)
    : rank_(rank), world_size_(world_size), timeout_(timeout) {
  thread_ = std::thread([this] { thread_main(); });
}

Communicator::~Communicator() { shutdown(); }

void Communicator::shutdown() {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  queue_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Communicator::thread_main() {
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(queue_mu_);
      queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
      if (stopping_) {
        lock.unlock();
        task.work->complete(unavailable(std::string(op_type_name(task.type)) +
                                        " not run: the communicator was shut down"));
        continue;
      }
    }
    const auto t0 = std::chrono::steady_clock::now();
    Status status = task.run();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    {
      std::lock_guard<std::mutex> lock(counters_mu_);
      counters_.op(task.type).calls++;
      if (status.ok()) log_op(task, ms);
    }
    task.work->complete(std::move(status));
  }
}

void Communicator::log_op(const Task& task, double ms) {
  if (!op_log_) return;
  if (!logged_ops_.empty() &&
      std::find(logged_ops_.begin(), logged_ops_.end(), task.type) == logged_ops_.end())
    return;
  op_log_->add(task.type, task.msg_bytes, ms);
  if (log_verbose_ && rank_ == 0) log::info(op_log_->line(rank_, task.type, task.msg_bytes, ms));
}

void Communicator::enable_op_log(std::vector<OpType> ops, bool verbose) {
  std::lock_guard<std::mutex> lock(counters_mu_);
  op_log_.emplace(world_size_);
  logged_ops_ = std::move(ops);
  log_verbose_ = verbose;
}

std::optional<OpLog> Communicator::op_log() const {
  std::lock_guard<std::mutex> lock(counters_mu_);
  return op_log_;
}

WorkPtr Communicator::enqueue(OpType type, uint64_t msg_bytes, std::function<Status()> run) {
  auto work = std::make_shared<Work>();
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    if (stopping_) {
      work->complete(unavailable("communicator is shut down"));
      return work;
    }
    queue_.push_back(Task{type, std::move(run), work, msg_bytes});
  }
  queue_cv_.notify_one();
  return work;
}

WorkPtr Communicator::failed(Status status) {
  auto work = std::make_shared<Work>();
  work->complete(std::move(status));
  return work;
}

WorkPtr Communicator::submit(OpType type, uint64_t msg_bytes, const char* op,
                             std::vector<StagedBuffers::Use> uses,
                             std::function<Status(const StagedBuffers&)> hook) {
  StatusOr<StagedBuffers> plan = StagedBuffers::plan(op, std::move(uses), hook_device());
  if (!plan.ok()) return failed(plan.status());
  // shared_ptr: the task must be copyable; the staging memory lives until
  // the task ends.
  auto staged = std::make_shared<StagedBuffers>(std::move(*plan));
  return enqueue(type, msg_bytes, [this, staged, hook = std::move(hook)] {
    ZT_RETURN_IF_ERROR(staged->stage_in(host_staging_));
    ZT_RETURN_IF_ERROR(hook(*staged));
    return staged->stage_out();
  });
}

WorkPtr Communicator::submit_allreduce(CommBuffer data, DType dtype, ReduceOp op) {
  Status st = check_elements("allreduce", data.bytes, dtype);
  if (!st.ok()) return failed(st);
  return submit(OpType::kAllreduce, data.bytes, "allreduce", {{data, true, true}},
                [=, this](const StagedBuffers& s) { return do_allreduce(s.span(0), dtype, op); });
}

WorkPtr Communicator::submit_reduce_scatter(CommBuffer input, CommBuffer output, DType dtype,
                                            ReduceOp op) {
  size_t n = static_cast<size_t>(world_size_);
  if (input.bytes != output.bytes * n)
    return failed(invalid_argument("reduce_scatter: input of " + std::to_string(input.bytes) +
                                   " bytes must be world_size (" + std::to_string(n) +
                                   ") x output (" + std::to_string(output.bytes) +
                                   " bytes); pad to padded_numel() (core/range.h)"));
  Status st = check_elements("reduce_scatter", output.bytes, dtype);
  if (!st.ok()) return failed(st);
  const std::byte* own =
      static_cast<const std::byte*>(input.data) + output.bytes * static_cast<size_t>(rank_);
  if (input.device == output.device && output.data != own &&
      overlaps(input.data, input.bytes, output.data, output.bytes))
    return failed(
        invalid_argument("reduce_scatter: output overlaps input other than as this rank's chunk"));
  return submit(OpType::kReduceScatter, output.bytes, "reduce_scatter",
                {{input, true, false}, {output, false, true}}, [=, this](const StagedBuffers& s) {
                  return do_reduce_scatter(s.span(0), s.span(1), dtype, op);
                });
}

WorkPtr Communicator::submit_allgather(CommBuffer input, CommBuffer output) {
  size_t n = static_cast<size_t>(world_size_);
  if (output.bytes != input.bytes * n)
    return failed(invalid_argument("allgather: output of " + std::to_string(output.bytes) +
                                   " bytes must be world_size (" + std::to_string(n) +
                                   ") x input (" + std::to_string(input.bytes) + " bytes)"));
  const std::byte* own =
      static_cast<const std::byte*>(output.data) + input.bytes * static_cast<size_t>(rank_);
  if (input.device == output.device && input.data != own &&
      overlaps(input.data, input.bytes, output.data, output.bytes))
    return failed(
        invalid_argument("allgather: input overlaps output other than as this rank's chunk"));
  return submit(OpType::kAllgather, input.bytes, "allgather",
                {{input, true, false}, {output, false, true}},
                [this](const StagedBuffers& s) { return do_allgather(s.span(0), s.span(1)); });
}

WorkPtr Communicator::submit_broadcast(CommBuffer data, int root) {
  if (root < 0 || root >= world_size_)
    return failed(invalid_argument("broadcast: root " + std::to_string(root) +
                                   " is not a rank of world size " + std::to_string(world_size_)));
  const bool is_root = root == rank_;  // the root only reads, the others only write
  return submit(OpType::kBroadcast, data.bytes, "broadcast", {{data, is_root, !is_root}},
                [=, this](const StagedBuffers& s) { return do_broadcast(s.span(0), root); });
}

WorkPtr Communicator::allreduce_async(std::span<std::byte> data, DType dtype, ReduceOp op) {
  return submit_allreduce(CommBuffer::host(data), dtype, op);
}

WorkPtr Communicator::reduce_scatter_async(std::span<const std::byte> input,
                                           std::span<std::byte> output, DType dtype, ReduceOp op) {
  return submit_reduce_scatter(CommBuffer::host(input), CommBuffer::host(output), dtype, op);
}

WorkPtr Communicator::allgather_async(std::span<const std::byte> input,
                                      std::span<std::byte> output) {
  return submit_allgather(CommBuffer::host(input), CommBuffer::host(output));
}

WorkPtr Communicator::broadcast_async(std::span<std::byte> data, int root) {
  return submit_broadcast(CommBuffer::host(data), root);
}

WorkPtr Communicator::barrier_async() {
  return enqueue(OpType::kBarrier, 0, [this] { return do_barrier(); });
}

Status Communicator::allreduce(std::span<std::byte> data, DType dtype, ReduceOp op) {
  return allreduce_async(data, dtype, op)->wait();
}
Status Communicator::allreduce(std::span<float> data, ReduceOp op) {
  return allreduce(std::as_writable_bytes(data), DType::kFloat32, op);
}
Status Communicator::allreduce(std::span<uint16_t> data, DType dtype, ReduceOp op) {
  if (dtype == DType::kFloat32) return invalid_argument("allreduce: uint16_t data needs fp16/bf16");
  return allreduce(std::as_writable_bytes(data), dtype, op);
}
Status Communicator::reduce_scatter(std::span<const std::byte> input, std::span<std::byte> output,
                                    DType dtype, ReduceOp op) {
  return reduce_scatter_async(input, output, dtype, op)->wait();
}
Status Communicator::reduce_scatter(std::span<const float> input, std::span<float> output,
                                    ReduceOp op) {
  return reduce_scatter(std::as_bytes(input), std::as_writable_bytes(output), DType::kFloat32, op);
}
Status Communicator::reduce_scatter(std::span<const uint16_t> input, std::span<uint16_t> output,
                                    DType dtype, ReduceOp op) {
  if (dtype == DType::kFloat32)
    return invalid_argument("reduce_scatter: uint16_t data needs fp16/bf16");
  return reduce_scatter(std::as_bytes(input), std::as_writable_bytes(output), dtype, op);
}
Status Communicator::allgather(std::span<const std::byte> input, std::span<std::byte> output) {
  return allgather_async(input, output)->wait();
}
Status Communicator::allgather(std::span<const float> input, std::span<float> output) {
  return allgather(std::as_bytes(input), std::as_writable_bytes(output));
}
Status Communicator::broadcast(std::span<std::byte> data, int root) {
  return broadcast_async(data, root)->wait();
}
Status Communicator::broadcast(std::span<float> data, int root) {
  return broadcast(std::as_writable_bytes(data), root);
}
Status Communicator::barrier() { return barrier_async()->wait(); }

CommCounters Communicator::counters() const {
  std::lock_guard<std::mutex> lock(counters_mu_);
  return counters_;
}

void Communicator::reset_counters() {
  std::lock_guard<std::mutex> lock(counters_mu_);
  counters_ = CommCounters{};
}

void Communicator::count_bytes(OpType op, uint64_t sent, uint64_t received) {
  std::lock_guard<std::mutex> lock(counters_mu_);
  counters_.op(op).bytes_sent += sent;
  counters_.op(op).bytes_received += received;
}

void Communicator::count_checksum_bytes(uint64_t sent, uint64_t received) {
  std::lock_guard<std::mutex> lock(counters_mu_);
  counters_.checksum_bytes_sent += sent;
  counters_.checksum_bytes_received += received;
}

Status validate_comm_options(const CommOptions& o) {
  if (o.world_size < 1)
    return invalid_argument("world size " + std::to_string(o.world_size) + " must be >= 1");
  if (o.rank < 0 || o.rank >= o.world_size)
    return invalid_argument("rank " + std::to_string(o.rank) + " is outside world size " +
                            std::to_string(o.world_size));
  if (o.master_port < 0 || o.master_port > 65535)
    return invalid_argument("master port " + std::to_string(o.master_port) + " is not a port");
  if (o.timeout.count() <= 0) return invalid_argument("comm timeout must be positive");
  return ok_status();
}

}  // namespace zerotrain::comm
