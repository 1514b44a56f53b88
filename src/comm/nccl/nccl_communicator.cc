// NcclCommunicator (nccl_communicator.h): rendezvous and init, the
// collectives on the communication stream, the polling watchdog.
#include "comm/nccl/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <thread>

#include "comm/nccl/nccl_api.h"
#include "comm/rendezvous.h"
#include "core/log.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/cuda_status.h"

namespace zerotrain::comm {
namespace {

using Clock = std::chrono::steady_clock;
using device::cuda::CudaDevice;

// The loaded library: every caller below runs after create_nccl_communicator
// (or nccl_runtime_version) checked that nccl_api() loads.
const NcclApi& nccl() { return **nccl_api(); }

// NCCL's result as a Status: the call, NCCL's name for the code and its
// last error text ("Duplicate GPU detected : rank 1 and rank 0 ...").
Status nccl_status(ncclResult_t r, ncclComm_t comm, const std::string& what) {
  const char* last = nccl().get_last_error(comm);
  std::string msg = what + ": NCCL " + nccl().get_error_string(r);
  if (last != nullptr && *last != '\0') msg += " (" + std::string(last) + ")";
  switch (r) {
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      return invalid_argument(msg);
    case ncclSystemError:
    case ncclRemoteError:
      return unavailable(msg);
    default:
      return internal_error(msg);
  }
}

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::kFloat16:
      return ncclFloat16;
    case DType::kBFloat16:
      return ncclBfloat16;
    case DType::kFloat32:
      break;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kAvg:
      return ncclAvg;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kSum:
      break;
  }
  return ncclSum;
}

std::string describe(const char* op, size_t bytes, size_t count, DType dtype) {
  return std::string(op) + " of " + std::to_string(bytes) + " bytes (" + std::to_string(count) +
         " x " + std::string(dtype_name(dtype)) + ")";
}

// The watchdog's polling pace: yield while a short collective finishes,
// then sleep 50 us between looks (a negligible share of one core).
class Backoff {
 public:
  void pause() {
    if (++polls_ < 200) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

 private:
  int polls_ = 0;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(const CommOptions& options, CudaDevice& device)
      : Communicator(options.rank, options.world_size, options.timeout),
        options_(options),
        device_(device) {}
  ~NcclCommunicator() override;

  // Store rendezvous, the unique id, and init (bounded by the timeout).
  Status connect();

 protected:
  device::Device* hook_device() const override { return &device_; }
  Status do_allreduce(std::span<std::byte> data, DType dtype, ReduceOp op) override;
  Status do_reduce_scatter(std::span<const std::byte> input, std::span<std::byte> output,
                           DType dtype, ReduceOp op) override;
  Status do_allgather(std::span<const std::byte> input, std::span<std::byte> output) override;
  Status do_broadcast(std::span<std::byte> data, int root) override;
  Status do_barrier() override;

 private:
  StatusOr<ncclUniqueId> unique_id();
  // Enqueues `call` on the communication stream after the compute stream's
  // work, waits for it under the watchdog, orders compute after it and
  // counts the bytes.
  Status run(OpType type, const std::string& desc, uint64_t sent, uint64_t received,
             const std::function<ncclResult_t(cudaStream_t)>& call);
  // Polls until NCCL's state leaves ncclInProgress and, when `event`, the
  // completion event has fired; an async error or the deadline aborts.
  Status watch(const std::string& desc, Clock::time_point deadline, bool event);
  // Aborts the communicator, remembers the first failure, returns `st`.
  Status fail(Status st);

  CommOptions options_;
  CudaDevice& device_;
  std::shared_ptr<Store> store_;  // holds rank 0's store server (rendezvous.h)
  ncclComm_t comm_ = nullptr;     // null after an abort
  cudaEvent_t done_ = nullptr;    // recorded on the comm stream after each op
  device::Buffer barrier_word_;   // the barrier's 1-element allreduce
  Status broken_;
};

NcclCommunicator::~NcclCommunicator() {
  shutdown();  // no hook may run while the communicator goes away
  if (comm_ != nullptr && device_.make_current().ok()) {
    // Finalize waits for the peers' side of in-flight work; a peer gone by
    // the deadline gets an abort instead of a hang.
    const ncclResult_t f = nccl().comm_finalize(comm_);
    bool clean = f == ncclSuccess || f == ncclInProgress;
    const auto deadline = Clock::now() + timeout();
    for (Backoff b; clean; b.pause()) {
      ncclResult_t state = ncclInProgress;
      const bool queried = nccl().comm_get_async_error(comm_, &state) == ncclSuccess;
      if (queried && state == ncclSuccess) break;
      clean = queried && state == ncclInProgress && Clock::now() <= deadline;
    }
    if (clean) {
      nccl().comm_destroy(comm_);
    } else {
      log::warn("rank ", rank(), ": NCCL communicator did not finalize cleanly; aborting it");
      nccl().comm_abort(comm_);
    }
  }
  barrier_word_.reset();
  if (done_ != nullptr) cudaEventDestroy(done_);
}

Status NcclCommunicator::fail(Status st) {
  if (broken_.ok()) {
    broken_ = Status(st.code(), "communicator unusable after an earlier failure: " + st.message());
    // Aborting frees our side now: peers' NCCL ops fail (or time out)
    // instead of waiting on a communicator that will never move again.
    if (comm_ != nullptr) nccl().comm_abort(comm_);
    comm_ = nullptr;
  }
  return st;
}

Status NcclCommunicator::watch(const std::string& desc, Clock::time_point deadline, bool event) {
  const std::string on_rank = desc + " on rank " + std::to_string(rank());
  bool settled = false;
  for (Backoff b;; b.pause()) {
    if (!settled) {
      ncclResult_t state = ncclInProgress;
      ncclResult_t q = nccl().comm_get_async_error(comm_, &state);
      if (q != ncclSuccess) return fail(nccl_status(q, comm_, on_rank));
      if (state != ncclSuccess && state != ncclInProgress) {
        Status st = nccl_status(state, comm_, on_rank + " failed");
        return fail(Status(st.code(), st.message() + "; a peer rank failed or the network broke"));
      }
      settled = state == ncclSuccess;
    }
    if (settled) {
      if (!event) return ok_status();
      const cudaError_t e = cudaEventQuery(done_);
      if (e == cudaSuccess) return ok_status();
      if (e != cudaErrorNotReady) return fail(device::cuda::cuda_status(e, on_rank));
      settled = false;  // keep watching NCCL's async state while the op runs
    }
    if (Clock::now() > deadline)
      return fail(timeout_error(on_rank + " did not complete within " + seconds_text(timeout()) +
                                ": a peer rank is dead or stalled (NCCL communicator aborted)"));
  }
}

Status NcclCommunicator::run(OpType type, const std::string& desc, uint64_t sent, uint64_t received,
                             const std::function<ncclResult_t(cudaStream_t)>& call) {
  ZT_RETURN_IF_ERROR(broken_);
  ZT_RETURN_IF_ERROR(device_.make_current());  // the runtime's device is per host thread
  const cudaStream_t comm = device_.comm_stream();
  ZT_RETURN_IF_ERROR(device_.stream_wait(comm, device_.compute_stream()));
  const auto deadline = Clock::now() + timeout();
  const ncclResult_t r = call(comm);
  if (r != ncclSuccess && r != ncclInProgress)
    return fail(nccl_status(r, comm_, desc + " on rank " + std::to_string(rank())));
  // Nonblocking: nothing else may go onto the stream until the enqueue settled.
  if (r == ncclInProgress) ZT_RETURN_IF_ERROR(watch(desc, deadline, /*event=*/false));
  Status st = device::cuda::cuda_status(cudaEventRecord(done_, comm), desc + ": recording its end");
  if (!st.ok()) return fail(st);
  ZT_RETURN_IF_ERROR(watch(desc, deadline, /*event=*/true));
  ZT_RETURN_IF_ERROR(device_.stream_wait(device_.compute_stream(), comm));
  count_bytes(type, sent, received);
  return ok_status();
}

StatusOr<ncclUniqueId> NcclCommunicator::unique_id() {
  ncclUniqueId id{};
  const int n = world_size(), r = rank();
  if (n == 1 || r == 0) {
    const ncclResult_t res = nccl().get_unique_id(&id);
    if (res != ncclSuccess) return nccl_status(res, nullptr, "ncclGetUniqueId");
  }
  if (n == 1) return id;
  ZT_ASSIGN_OR_RETURN(store_, connect_store(options_));
  ZT_ASSIGN_OR_RETURN(std::string prefix, fresh_prefix(*store_, "zt/" + options_.group + "/", r));
  ZT_RETURN_IF_ERROR(
      exchange_with_ranks(*store_, prefix + "arrived/", r, n, "1", timeout(), /*read=*/false)
          .status());
  const std::string key = prefix + "nccl_unique_id";
  if (r == 0) {
    ZT_RETURN_IF_ERROR(store_->set(key, std::string(id.internal, sizeof(id.internal))));
    return id;
  }
  ZT_ASSIGN_OR_RETURN(std::string bytes, store_->get(key, timeout()));
  if (bytes.size() != sizeof(id.internal))
    return corruption("NCCL unique id from the store at " + store_->address() + " has " +
                      std::to_string(bytes.size()) + " bytes, not " +
                      std::to_string(sizeof(id.internal)));
  std::memcpy(id.internal, bytes.data(), sizeof(id.internal));
  return id;
}

Status NcclCommunicator::connect() {
  ZT_RETURN_IF_ERROR(device_.make_current());
  ZT_ASSIGN_OR_RETURN(ncclUniqueId id, unique_id());
  const std::string desc =
      "NCCL init (world size " + std::to_string(world_size()) + ", " + device_.name() + ")";
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // init and every op return at once, so the watchdog can abort them
  const auto deadline = Clock::now() + timeout();
  const ncclResult_t r = nccl().comm_init_rank_config(&comm_, world_size(), id, rank(), &config);
  if (r != ncclSuccess && r != ncclInProgress) return fail(nccl_status(r, comm_, desc));
  ZT_RETURN_IF_ERROR(watch(desc, deadline, /*event=*/false));
  ZT_RETURN_IF_ERROR(device::cuda::cuda_status(
      cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "NCCL completion event"));
  ZT_ASSIGN_OR_RETURN(
      barrier_word_,
      device_.allocate(sizeof(float), device::MemoryCategory::kBuffers, "NCCL barrier word"));
  return ok_status();
}

Status NcclCommunicator::do_allreduce(std::span<std::byte> data, DType dtype, ReduceOp op) {
  const size_t es = dtype_size(dtype), count = data.size() / es;
  ZT_RETURN_IF_ERROR(broken_);
  if (count == 0) return ok_status();  // nothing moves, as in the Gloo ring
  const int n = world_size(), r = rank();
  uint64_t sent = 0, received = 0;
  if (n > 1) {  // the ring's bytes (docs/algorithms.md)
    auto c = [&](int i) { return ring_chunk(count, n, ((i % n) + n) % n).count; };
    sent = es * (2 * count - c(r) - c(r + 1));
    received = es * (2 * count - c(r - 1) - c(r));
  }
  return run(OpType::kAllreduce, describe("allreduce", data.size(), count, dtype), sent, received,
             [&](cudaStream_t s) {
               return nccl().all_reduce(data.data(), data.data(), count, nccl_type(dtype),
                                        nccl_op(op), comm_, s);
             });
}

Status NcclCommunicator::do_reduce_scatter(std::span<const std::byte> input,
                                           std::span<std::byte> output, DType dtype, ReduceOp op) {
  const size_t es = dtype_size(dtype), count = output.size() / es;
  ZT_RETURN_IF_ERROR(broken_);
  if (count == 0) return ok_status();
  const uint64_t bytes = static_cast<uint64_t>(world_size() - 1) * output.size();
  return run(OpType::kReduceScatter,
             "reduce_scatter of " + std::to_string(input.size()) + " bytes into " +
                 std::to_string(output.size()) + " (" + std::to_string(count) + " x " +
                 std::string(dtype_name(dtype)) + ")",
             bytes, bytes, [&](cudaStream_t s) {
               return nccl().reduce_scatter(input.data(), output.data(), count, nccl_type(dtype),
                                            nccl_op(op), comm_, s);
             });
}

Status NcclCommunicator::do_allgather(std::span<const std::byte> input,
                                      std::span<std::byte> output) {
  ZT_RETURN_IF_ERROR(broken_);
  if (input.empty()) return ok_status();
  const uint64_t bytes = static_cast<uint64_t>(world_size() - 1) * input.size();
  return run(OpType::kAllgather,
             "allgather of " + std::to_string(input.size()) + " bytes into " +
                 std::to_string(output.size()),
             bytes, bytes, [&](cudaStream_t s) {
               return nccl().all_gather(input.data(), output.data(), input.size(), ncclUint8, comm_,
                                        s);
             });
}

Status NcclCommunicator::do_broadcast(std::span<std::byte> data, int root) {
  ZT_RETURN_IF_ERROR(broken_);
  if (data.empty()) return ok_status();
  const int n = world_size(), pos = ((rank() - root) % n + n) % n;
  // The chain's bytes: the root only sends, the last rank only receives.
  const uint64_t b = data.size();
  const uint64_t sent = n > 1 && pos < n - 1 ? b : 0, received = n > 1 && pos > 0 ? b : 0;
  return run(OpType::kBroadcast,
             "broadcast of " + std::to_string(b) + " bytes from root " + std::to_string(root), sent,
             received, [&](cudaStream_t s) {
               return nccl().broadcast(data.data(), data.data(), data.size(), ncclUint8, root,
                                       comm_, s);
             });
}

Status NcclCommunicator::do_barrier() {
  // Counted as the Gloo dissemination barrier: ceil(log2 n) bytes each way.
  uint64_t rounds = 0;
  for (int d = 1; d < world_size(); d *= 2) ++rounds;
  return run(OpType::kBarrier, "barrier", rounds, rounds, [&](cudaStream_t s) {
    return nccl().all_reduce(barrier_word_.data(), barrier_word_.data(), 1, ncclFloat32, ncclSum,
                             comm_, s);
  });
}

}  // namespace

StatusOr<std::unique_ptr<Communicator>> create_nccl_communicator(const CommOptions& options,
                                                                 device::Device& device) {
  ZT_RETURN_IF_ERROR(validate_comm_options(options));
  ZT_RETURN_IF_ERROR(nccl_api().status());
  auto* gpu = dynamic_cast<CudaDevice*>(&device);
  if (gpu == nullptr)
    return invalid_argument("the NCCL communicator moves CUDA device memory; " + device.name() +
                            " is not a CUDA device");
  if (options.world_size > 1 && options.secret.empty() && !options.store)
    log::warn("no job secret (ZEROTRAIN_JOB_SECRET): the rendezvous store accepts any client");
  auto comm = std::make_unique<NcclCommunicator>(options, *gpu);
  ZT_RETURN_IF_ERROR(comm->connect());
  return std::unique_ptr<Communicator>(std::move(comm));
}

StatusOr<RankGpu> rank_gpu_of(device::Device& device) {
  auto* gpu = dynamic_cast<CudaDevice*>(&device);
  if (gpu == nullptr) return invalid_argument(device.name() + " is not a CUDA device");
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  return RankGpu{host, gpu->pci_bus_id()};
}

int nccl_runtime_version() {
  if (!nccl_api().ok()) return 0;
  int version = 0;
  return nccl().get_version(&version) == ncclSuccess ? version : 0;
}

}  // namespace zerotrain::comm
