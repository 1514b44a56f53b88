// Communicator: the collectives ZeRO needs (allreduce, reduce_scatter,
// allgather, broadcast, barrier), sync and async, with per-op byte counters.
//
// Buffers and streams: collectives take device-tagged Tensors (core/tensor.h;
// byte spans plus a DType, and float / uint16_t spans, are the host-memory
// forms). Each backend's hooks move one kind of memory (hook_device()):
// Gloo moves host memory, and reaches a device's memory through
// Device::host_address; NCCL moves its CudaDevice's memory as raw device
// pointers. A buffer of the other kind is staged on the communication
// thread (named note "comm staging", comm/staging.h): Gloo copies GPU
// memory (host_address null) into host memory, runs, and copies the result
// back (two ranks sharing one GPU, where NCCL refuses); NCCL copies host
// memory (the span forms, host tensors) into device memory. Stream
// semantics, for every backend (docs/architecture.md, "comm streams"): a
// collective is ordered after everything the caller enqueued on the
// device's compute stream before it (NCCL: its communication stream waits
// on the compute stream when the op starts; staging: Device::copy runs on
// the compute stream); Work::wait() orders the caller after the
// collective (Gloo and staging: the host blocks until the bytes are in
// place; NCCL: the compute stream waits on the communication stream, and
// the host blocks only in wait(); past the timeout a watchdog aborts the
// communicator). On the CPU device the compute stream is the calling
// thread, so both orderings are the plain host order. Every rank must call
// the same collectives in the same order with the same sizes.
//   allreduce(data)           in place; any element count, including 0.
//   reduce_scatter(in, out)   in = world_size equal chunks of out.size()
//                             bytes; out = this rank's reduced chunk. Pad
//                             the buffer to padded_numel() (core/range.h)
//                             when the element count is not divisible. out
//                             may be exactly in's chunk `rank` (in place).
//   allgather(in, out)        out = world_size * in.size() bytes, chunk r
//                             from rank r; in may be exactly out's chunk.
//   broadcast(data, root)     root's bytes to every rank.
// kAvg divides the sum by world_size. 16-bit partial sums are rounded to
// nearest even after each ring step (as NCCL does), so results are exact
// whenever every partial sum is representable.
//
// Async variants run on one communication thread owned by the communicator,
// strictly in submission order; sync calls queue behind them, so mixing the
// two is safe. The caller keeps the buffers alive and untouched until the
// Work completes. A failed collective (peer closed, timeout) returns a
// Status naming the op, the sizes and the peer rank, and leaves the
// communicator broken: later calls fail fast with the first error.
//
//   ZT_ASSIGN_OR_RETURN(auto comm, create_gloo_communicator(options));
//   ZT_RETURN_IF_ERROR(comm->allreduce(std::span<float>(grads), ReduceOp::kAvg));
//   WorkPtr w = comm->allgather_async(as_bytes(shard), as_writable_bytes(full));
//   ... compute ...
//   ZT_RETURN_IF_ERROR(w->wait());
//
// Thread-safety: all public methods may be called from any thread; ops are
// serialised on the communication thread. counters() is a snapshot.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>

#include "comm/op_log.h"
#include "comm/staging.h"
#include "comm/store/store.h"
#include "comm/types.h"
#include "core/status.h"
#include "core/tensor.h"

namespace zerotrain::comm {

// Completion handle of an async collective; owns its result Status.
class Work {
 public:
  static constexpr std::chrono::milliseconds kForever{-1};

  // Blocks until the op finished (or `timeout` passed: Timeout, and the op
  // keeps running; its own failure bound is the communicator's timeout).
  Status wait(std::chrono::milliseconds timeout = kForever);
  bool is_completed() const;
  // Called by the communication thread.
  void complete(Status status);

 private:
  mutable std::mutex mu_;
  std::condition_variable done_cv_;
  bool done_ = false;
  Status status_;
};
using WorkPtr = std::shared_ptr<Work>;

// Test seam: one fault the Gloo backend injects into its own outgoing ring,
// chain or barrier messages (the real TCP path, between real ranks). It
// acts on rank `rank`'s `message`-th (0-based) payload send that matches
// `op` and `peer`, counting from the end of connect(). kDrop never sends
// it (the receiver times out); kDelay sleeps `delay` on the communication
// thread first; kCorrupt sends a copy with byte `byte % length` inverted
// (the sender's buffer is untouched), which the receiver's wire checksum
// turns into a Corruption error.
struct FaultPlan {
  enum class Action { kNone, kDrop, kDelay, kCorrupt };
  Action action = Action::kNone;
  int rank = 0;
  int peer = -1;             // -1: any destination
  std::optional<OpType> op;  // empty: any collective
  int message = 0;
  std::chrono::milliseconds delay{0};
  size_t byte = 0;
};

// How to join the job. comm_options_from_env() fills it the way
// `zerotrain run` sets the environment.
struct CommOptions {
  int rank = 0;
  int world_size = 1;
  std::string master_addr = "127.0.0.1";  // rank 0's store
  int master_port = 29500;
  std::string secret;  // ZEROTRAIN_JOB_SECRET; every store client presents it
  // A collective fails after this long without progress; rendezvous fails
  // after this long waiting for ranks.
  std::chrono::milliseconds timeout{30000};
  std::string iface;              // network interface for gloo ("eth0"); overrides hostname
  std::string hostname;           // address peers reach this rank at; empty: 127.0.0.1
                                  // when master_addr is loopback, else the host name
  std::string group = "default";  // namespaces store keys
  std::shared_ptr<Store> store;   // rendezvous over this store instead of TCP
  bool host_store = true;         // rank 0 starts the TcpStoreServer
  // A 4-byte checksum travels with every payload message and is verified on
  // receipt (Corruption on mismatch). Every rank must agree.
  bool wire_checksums = true;
  FaultPlan fault;  // tests only
};

// This process's job from its environment, whoever started it
// (job_env.h: job_from_env(process_env()).options). InvalidArgument naming
// the variable for bad or contradictory values.
StatusOr<CommOptions> comm_options_from_env();
Status validate_comm_options(const CommOptions& options);

class Communicator {
 public:
  virtual ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  Status allreduce(std::span<std::byte> data, DType dtype, ReduceOp op);
  Status allreduce(std::span<float> data, ReduceOp op);
  Status allreduce(std::span<uint16_t> data, DType dtype, ReduceOp op);
  Status reduce_scatter(std::span<const std::byte> input, std::span<std::byte> output, DType dtype,
                        ReduceOp op);
  Status reduce_scatter(std::span<const float> input, std::span<float> output, ReduceOp op);
  Status reduce_scatter(std::span<const uint16_t> input, std::span<uint16_t> output, DType dtype,
                        ReduceOp op);
  Status allgather(std::span<const std::byte> input, std::span<std::byte> output);
  Status allgather(std::span<const float> input, std::span<float> output);
  Status broadcast(std::span<std::byte> data, int root);
  Status broadcast(std::span<float> data, int root);
  Status barrier();

  // Device-tagged buffers (the tensor's dtype is the element type; see
  // "Buffers and streams" above): the primary form ZeRO uses.
  Status allreduce(Tensor data, ReduceOp op);
  Status reduce_scatter(ConstTensor input, Tensor output, ReduceOp op);
  Status allgather(ConstTensor input, Tensor output);
  Status broadcast(Tensor data, int root);
  WorkPtr allreduce_async(Tensor data, ReduceOp op);
  WorkPtr reduce_scatter_async(ConstTensor input, Tensor output, ReduceOp op);
  WorkPtr allgather_async(ConstTensor input, Tensor output);
  WorkPtr broadcast_async(Tensor data, int root);

  WorkPtr allreduce_async(std::span<std::byte> data, DType dtype, ReduceOp op);
  WorkPtr reduce_scatter_async(std::span<const std::byte> input, std::span<std::byte> output,
                               DType dtype, ReduceOp op);
  WorkPtr allgather_async(std::span<const std::byte> input, std::span<std::byte> output);
  WorkPtr broadcast_async(std::span<std::byte> data, int root);
  WorkPtr barrier_async();

  CommCounters counters() const;
  void reset_counters();

  // The comms logger: from now on, time every collective whose kind is in
  // `ops` (all when empty) on the communication thread; `verbose` also logs
  // a line per op. op_log() is a snapshot.
  void enable_op_log(std::vector<OpType> ops, bool verbose);
  std::optional<OpLog> op_log() const;

 protected:
  Communicator(int rank, int world_size, std::chrono::milliseconds timeout);

  // The memory the do_* hooks move ("comm staging", comm/staging.h): null
  // (the default) is host memory, and a tensor in a device's memory comes
  // through Device::host_address or, where that is null, staged through
  // host memory; a device is that device's memory as raw device pointers
  // (NCCL), and host memory is staged into it. Fixed for the
  // communicator's life.
  virtual device::Device* hook_device() const { return nullptr; }

  // Backend hooks: run on the communication thread, one at a time, with
  // arguments already validated, on buffers in hook_device()'s memory.
  virtual Status do_allreduce(std::span<std::byte> data, DType dtype, ReduceOp op) = 0;
  virtual Status do_reduce_scatter(std::span<const std::byte> input, std::span<std::byte> output,
                                   DType dtype, ReduceOp op) = 0;
  virtual Status do_allgather(std::span<const std::byte> input, std::span<std::byte> output) = 0;
  virtual Status do_broadcast(std::span<std::byte> data, int root) = 0;
  virtual Status do_barrier() = 0;

  // Backends report each completed transfer.
  void count_bytes(OpType op, uint64_t sent, uint64_t received);
  void count_checksum_bytes(uint64_t sent, uint64_t received);
  // Stops the communication thread: the running op finishes, queued ones
  // fail. Derived destructors call it before tearing down their state.
  void shutdown();

 private:
  struct Task {
    OpType type;
    std::function<Status()> run;
    WorkPtr work;
    uint64_t msg_bytes = 0;  // as the comms logger records it (op_log.h)
  };
  WorkPtr enqueue(OpType type, uint64_t msg_bytes, std::function<Status()> run);
  // Every collective goes through these: checks on the caller's thread,
  // then a task that stages (staging.h), runs the hook, and stages back.
  WorkPtr submit_allreduce(CommBuffer data, DType dtype, ReduceOp op);
  WorkPtr submit_reduce_scatter(CommBuffer input, CommBuffer output, DType dtype, ReduceOp op);
  WorkPtr submit_allgather(CommBuffer input, CommBuffer output);
  WorkPtr submit_broadcast(CommBuffer data, int root);
  WorkPtr submit(OpType type, uint64_t msg_bytes, const char* op,
                 std::vector<StagedBuffers::Use> uses,
                 std::function<Status(const StagedBuffers&)> hook);
  void log_op(const Task& task, double ms);
  static WorkPtr failed(Status status);
  void thread_main();

  const int rank_;
  const int world_size_;
  const std::chrono::milliseconds timeout_;

  mutable std::mutex counters_mu_;
  CommCounters counters_;
  std::optional<OpLog> op_log_;          // guarded by counters_mu_
  std::vector<std::byte> host_staging_;  // communication thread only
  std::vector<OpType> logged_ops_;
  bool log_verbose_ = false;

  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<Task> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace zerotrain::comm
