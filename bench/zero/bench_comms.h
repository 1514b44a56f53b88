// Communicators for taking a ZeRO step apart (bench/zero):
//   RecordingCommunicator  forwards every collective to a real communicator
//                          and, while recording, notes each one (op, bytes,
//                          dtype, reduce op, root) in issue order;
//   NullCommunicator       a world of `world` ranks whose collectives return
//                          at once and move nothing: the engine does all of
//                          its per-rank work (compute, copies, optimizer on
//                          its own partition) with no communication — its
//                          numbers are meaningless, its time is compute alone;
//   replay_collectives     issues a recorded list on a real communicator,
//                          inline, into scratch buffers: the communication
//                          of a step without its compute.
//
//   RecordingCommunicator rec(gloo.get());
//   rec.start_recording(); ... one step on an engine over &rec ...; auto ops = rec.stop_recording();
//   ZT_RETURN_IF_ERROR(replay_collectives(ops, gloo.get()));
//
// Thread-safety: as Communicator; the record is written on the
// communication thread and read after stop_recording().
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "comm/communicator.h"

namespace zerotrain::bench {

struct RecordedOp {
  comm::OpType type = comm::OpType::kAllreduce;
  size_t input_bytes = 0, output_bytes = 0;  // allreduce/broadcast: the buffer
  comm::DType dtype = comm::DType::kFloat32;
  comm::ReduceOp reduce = comm::ReduceOp::kSum;
  int root = 0;
};

class RecordingCommunicator : public comm::Communicator {
 public:
  explicit RecordingCommunicator(comm::Communicator* inner);
  ~RecordingCommunicator() override;
  void start_recording();
  std::vector<RecordedOp> stop_recording();

 protected:
  Status do_allreduce(std::span<std::byte> data, comm::DType dtype, comm::ReduceOp op) override;
  Status do_reduce_scatter(std::span<const std::byte> input, std::span<std::byte> output,
                           comm::DType dtype, comm::ReduceOp op) override;
  Status do_allgather(std::span<const std::byte> input, std::span<std::byte> output) override;
  Status do_broadcast(std::span<std::byte> data, int root) override;
  Status do_barrier() override;

 private:
  void note(const RecordedOp& op);
  comm::Communicator* inner_;
  std::mutex mu_;
  bool recording_ = false;
  std::vector<RecordedOp> ops_;
};

class NullCommunicator : public comm::Communicator {
 public:
  NullCommunicator(int rank, int world);
  ~NullCommunicator() override;

 protected:
  Status do_allreduce(std::span<std::byte>, comm::DType, comm::ReduceOp) override { return {}; }
  // The results a rank would get if every rank held its data: its own
  // chunk (reduce-scatter) and its input in every chunk (all-gather), so
  // the compute that follows sees finite values, as in the real run.
  Status do_reduce_scatter(std::span<const std::byte> in, std::span<std::byte> out, comm::DType,
                           comm::ReduceOp) override;
  Status do_allgather(std::span<const std::byte> in, std::span<std::byte> out) override;
  Status do_broadcast(std::span<std::byte>, int) override { return {}; }
  Status do_barrier() override { return {}; }
};

// Issues `ops` on `comm` in order, each on zeroed scratch of its size (every
// rank must replay the same list).
Status replay_collectives(const std::vector<RecordedOp>& ops, comm::Communicator* comm);

}  // namespace zerotrain::bench
