// Internal to comm/: the GlooCommunicator class shared by gloo_backend.cc
// (rendezvous, lifetime, error conversion) and ring.cc (the algorithms).
// Use create_gloo_communicator() from comm/gloo/gloo_communicator.h instead.
//
// Thread-safety: the do_* hooks run only on the communication thread.
#pragma once

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/store/store.h"

namespace zerotrain::comm {

class GlooCommunicator final : public Communicator {
 public:
  explicit GlooCommunicator(const CommOptions& options);
  ~GlooCommunicator() override;

  // Rendezvous and full-mesh connect; called once by the factory.
  Status connect();

  // A step-level transfer failed: builds the Status ("allreduce of 4096
  // bytes (1024 x fp32) failed on rank 0: peer rank 2 closed the
  // connection"), closes every connection so peers fail fast too, and
  // remembers it so later collectives fail immediately.
  Status fail(const std::string& desc, int peer, const char* direction, const std::string& what);
  // Same bookkeeping for a Status built by the caller (checksum mismatch).
  Status fail_with(Status st);
  // Non-OK after an earlier failure.
  Status usable() const { return broken_; }
  // Fresh slot range for one collective (all ranks agree: same op order).
  uint64_t next_slot_base() { return (++op_seq_) << 32; }
  std::unique_ptr<gloo::transport::UnboundBuffer> buffer(void* ptr, size_t bytes);
  gloo::Context& context() { return *context_; }
  void count(OpType op, uint64_t sent, uint64_t received) { count_bytes(op, sent, received); }
  void count_checksum(uint64_t sent, uint64_t received) { count_checksum_bytes(sent, received); }
  bool wire_checksums() const { return options_.wire_checksums; }
  // The fault (or kNone) for this rank's next payload send of `op` to `peer`.
  const FaultPlan& fault_plan() const { return options_.fault; }
  FaultPlan::Action next_fault(OpType op, int peer);

 protected:
  Status do_allreduce(std::span<std::byte> data, DType dtype, ReduceOp op) override;
  Status do_reduce_scatter(std::span<const std::byte> input, std::span<std::byte> output,
                           DType dtype, ReduceOp op) override;
  Status do_allgather(std::span<const std::byte> input, std::span<std::byte> output) override;
  Status do_broadcast(std::span<std::byte> data, int root) override;
  Status do_barrier() override;

 private:
  Status connect_mesh(Store& store, const std::string& prefix);

  CommOptions options_;
  std::string store_address_;
  std::shared_ptr<Store> store_;  // holds rank 0's store server (rendezvous.h)
  std::shared_ptr<gloo::Context> context_;
  Status broken_;
  uint64_t op_seq_ = 0;
  bool connected_ = false;                   // connect()'s own barrier is not fault-injected
  int fault_matches_ = 0;                    // payload sends that matched the fault plan so far
  std::vector<std::byte> scratch_;           // ring receive/accumulate space
  std::byte token_send_{1}, token_recv_{0};  // barrier messages
};

}  // namespace zerotrain::comm
