// Pipelined ring engine (see ring_run.h); the Stepper is in stepper.cc.
#include "comm/gloo/ring_run.h"

#include <algorithm>

#include "comm/gloo/reduce.h"

namespace zerotrain::comm {
namespace {

// Pieces of about this size stream around the ring: large enough that the
// per-message handshake is noise, small enough to overlap reduce and wire.
constexpr size_t kPieceBytes = 512 << 10;

int mod(int a, int n) { return ((a % n) + n) % n; }

}  // namespace

RingLayout RingLayout::make(size_t es, size_t count, int n, size_t equal_chunk) {
  RingLayout l;
  l.es = es;
  l.count = count;
  l.n = n;
  l.equal_chunk = equal_chunk;
  size_t max_chunk = equal_chunk > 0 ? equal_chunk : ring_chunk(count, n, 0).count;
  size_t pieces = (max_chunk * es + kPieceBytes - 1) / kPieceBytes;
  l.pieces = static_cast<int>(std::clamp<size_t>(pieces, 1, std::max<size_t>(max_chunk, 1)));
  return l;
}

RingChunk RingLayout::chunk(int i) const {
  if (equal_chunk > 0) return {static_cast<size_t>(i) * equal_chunk, equal_chunk};
  return ring_chunk(count, n, i);
}

std::pair<size_t, size_t> RingLayout::piece(int i, int p) const {
  RingChunk c = chunk(i);
  RingChunk q = ring_chunk(c.count, pieces, p);
  return {(c.offset + q.offset) * es, q.count * es};
}

size_t RingLayout::max_piece_bytes() const {
  size_t max_chunk = equal_chunk > 0 ? equal_chunk : ring_chunk(count, n, 0).count;
  return ring_chunk(max_chunk, pieces, 0).count * es;
}

RingRun::RingRun(GlooCommunicator& comm, OpType type, std::string desc, RingLayout layout,
                 std::vector<std::byte>& scratch)
    : comm_(comm),
      st_(comm, type, std::move(desc)),
      layout_(layout),
      scratch_(scratch),
      rank_(comm.rank()),
      left_(mod(comm.rank() - 1, layout.n)),
      right_(mod(comm.rank() + 1, layout.n)) {}

std::vector<RingRun::Item> RingRun::items(int first_step, int steps, int chunk_shift) const {
  std::vector<Item> out;
  for (int s = 0; s < steps; ++s)
    for (int p = 0; p < layout_.pieces; ++p) {
      auto [off, len] = layout_.piece(mod(rank_ - s - chunk_shift, layout_.n), p);
      if (len > 0) out.push_back({first_step + s, p, off, len});
    }
  return out;
}

Status RingRun::reduce_scatter(std::byte* own, std::byte* out, DType dtype, ReduceOp op,
                               bool in_place, bool then_allgather) {
  const int n = layout_.n;
  const size_t es = layout_.es;
  const int divisor = op == ReduceOp::kAvg ? n : 1;
  const size_t piece_bytes = layout_.max_piece_bytes();
  const size_t chunk_bytes = in_place ? 0 : layout_.equal_chunk * es;
  scratch_.resize(2 * piece_bytes + 2 * chunk_bytes);
  std::byte* tmp[2] = {scratch_.data(), scratch_.data() + piece_bytes};
  std::byte* acc[2] = {tmp[1] + piece_bytes, tmp[1] + piece_bytes + chunk_bytes};
  std::unique_ptr<GlooBuffer> into[2] = {comm_.buffer(tmp[0], piece_bytes),
                                         comm_.buffer(tmp[1], piece_bytes)};
  if (!in_place)
    for (int i = 0; i < 2; ++i) send_acc_[i].buf = comm_.buffer(acc[i], chunk_bytes);
  send_data_.buf = comm_.buffer(own, layout_.count * es);
  for (int p = 0; p < layout_.pieces; ++p) {  // step 0: raw chunk rank-1
    auto [off, len] = layout_.piece(mod(rank_ - 1, n), p);
    if (len > 0) ZT_RETURN_IF_ERROR(st_.post_send(send_data_, right_, slot(0, p), off, len));
  }
  std::vector<Item> list = items(0, n - 1, 2);
  if (!list.empty())
    ZT_RETURN_IF_ERROR(
        st_.post_recv(*into[0], left_, slot(list[0].step, list[0].piece), 0, list[0].len));
  int drained_step = -1;
  for (size_t k = 0; k < list.size(); ++k) {
    const Item& it = list[k];
    if (k + 1 < list.size()) {  // keep the next receive in flight while reducing
      const Item& nx = list[k + 1];
      ZT_RETURN_IF_ERROR(
          st_.post_recv(*into[(k + 1) % 2], left_, slot(nx.step, nx.piece), 0, nx.len));
    }
    ZT_RETURN_IF_ERROR(st_.wait_recv(*into[k % 2], left_, it.len));
    const bool last = it.step == n - 2;  // this piece belongs to chunk `rank`
    size_t rel = it.off - layout_.chunk(mod(rank_ - it.step - 2, n)).offset * es;
    std::byte* dst = own + it.off;
    SendBuffer* sb = &send_data_;
    size_t soff = it.off;
    if (!in_place && last) {
      dst = out + rel;
    } else if (!in_place) {
      SendBuffer& a = send_acc_[it.step % 2];
      if (drained_step < it.step) {  // sends from two steps ago still read it
        ZT_RETURN_IF_ERROR(st_.drain(a, right_));
        drained_step = it.step;
      }
      dst = acc[it.step % 2] + rel;
      sb = &a;
      soff = rel;
    }
    reduce_combine(dst, tmp[k % 2], own + it.off, it.len / es, dtype, op, last ? divisor : 1);
    if (!last) {
      ZT_RETURN_IF_ERROR(st_.post_send(*sb, right_, slot(it.step + 1, it.piece), soff, it.len));
    } else if (in_place && then_allgather) {  // start the all-gather at once
      ZT_RETURN_IF_ERROR(st_.post_send(send_data_, right_, slot(n - 1, it.piece), it.off, it.len));
      ag_step0_posted_ = true;
    }
  }
  return ok_status();
}

Status RingRun::allgather(std::byte* data) {
  const int n = layout_.n;
  const size_t total = layout_.count * layout_.es;
  if (!send_data_.buf) send_data_.buf = comm_.buffer(data, total);
  std::unique_ptr<GlooBuffer> into[2] = {comm_.buffer(data, total), comm_.buffer(data, total)};
  if (!ag_step0_posted_) {
    for (int p = 0; p < layout_.pieces; ++p) {
      auto [off, len] = layout_.piece(rank_, p);
      if (len > 0) ZT_RETURN_IF_ERROR(st_.post_send(send_data_, right_, slot(n - 1, p), off, len));
    }
  }
  std::vector<Item> list = items(n - 1, n - 1, 1);
  if (!list.empty())
    ZT_RETURN_IF_ERROR(st_.post_recv(*into[0], left_, slot(list[0].step, list[0].piece),
                                     list[0].off, list[0].len));
  for (size_t k = 0; k < list.size(); ++k) {
    const Item& it = list[k];
    if (k + 1 < list.size()) {
      const Item& nx = list[k + 1];
      ZT_RETURN_IF_ERROR(
          st_.post_recv(*into[(k + 1) % 2], left_, slot(nx.step, nx.piece), nx.off, nx.len));
    }
    ZT_RETURN_IF_ERROR(st_.wait_recv(*into[k % 2], left_, it.len));
    if (it.step < 2 * n - 3)  // forward to the right unless it is the last hop
      ZT_RETURN_IF_ERROR(
          st_.post_send(send_data_, right_, slot(it.step + 1, it.piece), it.off, it.len));
  }
  return ok_status();
}

Status RingRun::finish() {
  ZT_RETURN_IF_ERROR(st_.drain(send_data_, right_));
  for (SendBuffer& a : send_acc_)
    if (a.buf) ZT_RETURN_IF_ERROR(st_.drain(a, right_));
  return ok_status();
}

}  // namespace zerotrain::comm
