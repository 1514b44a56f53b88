// Internal to comm/: the pipelined ring engine behind allreduce,
// reduce_scatter and allgather (docs/algorithms.md). A buffer is cut into
// world_size chunks and each chunk into `pieces` pieces; pieces stream
// around the ring so that reducing one piece overlaps receiving the next.
// Stepper wraps gloo's unbound-buffer calls: every wait is bounded by the
// communicator's timeout, every gloo exception becomes a Status naming the
// op and the peer, and completed transfers feed the byte counters. It also
// sends a wire checksum with each payload message (slot | kChecksumSlot)
// and verifies it on receipt, and applies the options' FaultPlan. A buffer
// may have at most one outstanding receive at a time.
//
// Thread-safety: used only on the communication thread, one op at a time.
#pragma once

#include <gloo/transport/unbound_buffer.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "comm/gloo/gloo_backend.h"

namespace zerotrain::comm {

using GlooBuffer = gloo::transport::UnboundBuffer;

// A message's checksum (and, for an injected corruption, the corrupted
// copy of its payload) in flight, in memory of its own.
struct WireSide {
  std::vector<std::byte> mem;  // [checksum (4 bytes) | corrupted payload copy]
  std::unique_ptr<GlooBuffer> buf;
  int pending = 0;
};

// A send-side unbound buffer with its not-yet-awaited sends.
struct SendBuffer {
  std::unique_ptr<GlooBuffer> buf;
  int pending = 0;
  uint64_t pending_bytes = 0;
  std::vector<std::unique_ptr<WireSide>> side;
};

// The checksum expected for the one outstanding receive into a buffer.
struct RecvCheck {
  uint32_t value = 0;
  std::unique_ptr<GlooBuffer> buf;
  size_t off = 0, len = 0;
  bool pending = false;
};

class Stepper {
 public:
  Stepper(GlooCommunicator& comm, OpType type, std::string desc)
      : comm_(comm), type_(type), desc_(std::move(desc)), base_(comm.next_slot_base()) {}

  Status post_recv(GlooBuffer& b, int peer, uint64_t slot, size_t off, size_t len);
  Status wait_recv(GlooBuffer& b, int peer, size_t len);
  Status post_send(SendBuffer& b, int peer, uint64_t slot, size_t off, size_t len);
  // Waits for every pending send of `b`, then counts their bytes.
  Status drain(SendBuffer& b, int peer);
  // One send and one receive of the same slot, both awaited.
  Status exchange(uint64_t slot, SendBuffer& s, int to, size_t soff, size_t slen, GlooBuffer& r,
                  int from, size_t roff, size_t rlen);

 private:
  template <typename F>
  Status guard(int peer, const char* direction, F&& f);
  Status post_side(SendBuffer& b, int peer, uint64_t slot, size_t off, size_t len,
                   FaultPlan::Action fault);
  Status verify(GlooBuffer& b, RecvCheck& rc, int peer);

  GlooCommunicator& comm_;
  OpType type_;
  std::string desc_;
  uint64_t base_;
  std::unordered_map<const GlooBuffer*, RecvCheck> checks_;
};

// Chunk and piece geometry, identical on every rank.
struct RingLayout {
  size_t es = 4;           // element bytes
  size_t count = 0;        // elements in the whole buffer
  int n = 1;               // ranks
  size_t equal_chunk = 0;  // elements per chunk, or 0 for ring_chunk() sizes
  int pieces = 1;          // pieces per chunk

  static RingLayout make(size_t es, size_t count, int n, size_t equal_chunk);
  RingChunk chunk(int i) const;
  // Byte offset (in the whole buffer) and byte length of piece p of chunk i.
  std::pair<size_t, size_t> piece(int i, int p) const;
  size_t max_piece_bytes() const;
};

class RingRun {
 public:
  RingRun(GlooCommunicator& comm, OpType type, std::string desc, RingLayout layout,
          std::vector<std::byte>& scratch);

  // Reduce-scatter ring: afterwards chunk `rank` is fully reduced. `own` is
  // this rank's contribution (whole buffer). In place (allreduce), partial
  // sums overwrite `own` and the result stays there; otherwise they go to
  // two scratch accumulators and the result to `out` (one chunk).
  Status reduce_scatter(std::byte* own, std::byte* out, DType dtype, ReduceOp op, bool in_place,
                        bool then_allgather);
  // All-gather ring over `data`, whose chunk `rank` is already final.
  Status allgather(std::byte* data);
  // Waits for every outstanding send.
  Status finish();

 private:
  struct Item {
    int step, piece;
    size_t off, len;
  };
  // Non-empty receives of a phase, in ring order.
  std::vector<Item> items(int first_step, int steps, int chunk_shift) const;
  uint64_t slot(int step, int piece) const {
    return static_cast<uint64_t>(step) * static_cast<uint64_t>(layout_.pieces) +
           static_cast<uint64_t>(piece);
  }

  GlooCommunicator& comm_;
  Stepper st_;
  RingLayout layout_;
  std::vector<std::byte>& scratch_;
  int rank_, left_, right_;
  SendBuffer send_data_, send_acc_[2];
  bool ag_step0_posted_ = false;
};

}  // namespace zerotrain::comm
