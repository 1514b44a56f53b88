// Stepper (see ring_run.h): bounded gloo waits turned into Statuses, byte
// counters, wire checksums and the test-only fault injection.
#include <gloo/common/error.h>

#include <cstdio>
#include <cstring>
#include <thread>

#include "comm/gloo/ring_run.h"
#include "core/crc32c.h"

namespace zerotrain::comm {
namespace {

// Checksum messages use the payload's slot with this bit set; payload slots
// (step * pieces + piece, segment or round numbers) stay far below it.
constexpr uint64_t kChecksumSlot = uint64_t{1} << 31;
constexpr size_t kChecksumBytes = sizeof(uint32_t);

void check_completed(bool completed) {
  if (!completed) throw gloo::IoException("transfer aborted");
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

}  // namespace

template <typename F>
Status Stepper::guard(int peer, const char* direction, F&& f) {
  try {
    f();
    return ok_status();
  } catch (const std::exception& e) {
    return comm_.fail(desc_, peer, direction, e.what());
  }
}

Status Stepper::post_recv(GlooBuffer& b, int peer, uint64_t slot, size_t off, size_t len) {
  ZT_CHECK(slot < kChecksumSlot, "ring slot ", slot, " collides with the checksum slots");
  ZT_RETURN_IF_ERROR(guard(peer, "receive from", [&] { b.recv(peer, base_ + slot, off, len); }));
  if (!comm_.wire_checksums()) return ok_status();
  RecvCheck& rc = checks_[&b];
  ZT_CHECK(!rc.pending, "two outstanding receives into one buffer in ", desc_);
  if (!rc.buf) rc.buf = comm_.buffer(&rc.value, kChecksumBytes);
  rc.off = off;
  rc.len = len;
  rc.pending = true;
  return guard(peer, "receive from",
               [&] { rc.buf->recv(peer, base_ + (slot | kChecksumSlot), 0, kChecksumBytes); });
}

Status Stepper::verify(GlooBuffer& b, RecvCheck& rc, int peer) {
  ZT_RETURN_IF_ERROR(guard(peer, "receive from",
                           [&] { check_completed(rc.buf->waitRecv(nullptr, comm_.timeout())); }));
  rc.pending = false;
  comm_.count_checksum(0, kChecksumBytes);
  uint32_t got = wire_checksum(static_cast<const std::byte*>(b.ptr) + rc.off, rc.len);
  if (got == rc.value) return ok_status();
  return comm_.fail_with(corruption(
      desc_ + " failed on rank " + std::to_string(comm_.rank()) + ": " + std::to_string(rc.len) +
      "-byte message from peer rank " + std::to_string(peer) + " failed its wire checksum (sent " +
      hex(rc.value) + ", received data hashes to " + hex(got) + ")"));
}

// The timeout bounds each wait, i.e. the time without progress.
Status Stepper::wait_recv(GlooBuffer& b, int peer, size_t len) {
  ZT_RETURN_IF_ERROR(
      guard(peer, "receive from", [&] { check_completed(b.waitRecv(nullptr, comm_.timeout())); }));
  comm_.count(type_, 0, len);
  if (!comm_.wire_checksums()) return ok_status();
  auto it = checks_.find(&b);
  ZT_CHECK(it != checks_.end() && it->second.pending, "receive without a checksum in ", desc_);
  return verify(b, it->second, peer);
}

Status Stepper::post_send(SendBuffer& b, int peer, uint64_t slot, size_t off, size_t len) {
  ZT_CHECK(slot < kChecksumSlot, "ring slot ", slot, " collides with the checksum slots");
  FaultPlan::Action fault = comm_.next_fault(type_, peer);
  if (fault == FaultPlan::Action::kDrop) return ok_status();
  if (fault == FaultPlan::Action::kDelay) std::this_thread::sleep_for(comm_.fault_plan().delay);
  if (fault == FaultPlan::Action::kCorrupt || comm_.wire_checksums())
    return post_side(b, peer, slot, off, len, fault);
  ZT_RETURN_IF_ERROR(guard(peer, "send to", [&] { b.buf->send(peer, base_ + slot, off, len); }));
  b.pending++;
  b.pending_bytes += len;
  return ok_status();
}

// The checksum is taken over the true bytes; an injected corruption then
// goes out from a damaged private copy.
Status Stepper::post_side(SendBuffer& b, int peer, uint64_t slot, size_t off, size_t len,
                          FaultPlan::Action fault) {
  const bool corrupt = fault == FaultPlan::Action::kCorrupt && len > 0;
  const std::byte* data = static_cast<const std::byte*>(b.buf->ptr) + off;
  auto side = std::make_unique<WireSide>();
  side->mem.resize(kChecksumBytes + (corrupt ? len : 0));
  const uint32_t sum = wire_checksum(data, len);
  std::memcpy(side->mem.data(), &sum, kChecksumBytes);
  if (corrupt) {
    std::memcpy(side->mem.data() + kChecksumBytes, data, len);
    side->mem[kChecksumBytes + comm_.fault_plan().byte % len] ^= std::byte{0xFF};
  }
  side->buf = comm_.buffer(side->mem.data(), side->mem.size());
  WireSide& s = *side;
  b.side.push_back(std::move(side));
  ZT_RETURN_IF_ERROR(guard(peer, "send to", [&] {
    if (corrupt) {
      s.buf->send(peer, base_ + slot, kChecksumBytes, len);
      s.pending++;
    } else {
      b.buf->send(peer, base_ + slot, off, len);
      b.pending++;
    }
  }));
  b.pending_bytes += len;
  if (!comm_.wire_checksums()) return ok_status();
  return guard(peer, "send to", [&] {
    s.buf->send(peer, base_ + (slot | kChecksumSlot), 0, kChecksumBytes);
    s.pending++;
  });
}

Status Stepper::drain(SendBuffer& b, int peer) {
  for (; b.pending > 0; --b.pending)
    ZT_RETURN_IF_ERROR(guard(peer, "send to",
                             [&] { check_completed(b.buf->waitSend(nullptr, comm_.timeout())); }));
  uint64_t sums = 0;
  for (auto& s : b.side) {
    for (; s->pending > 0; --s->pending)
      ZT_RETURN_IF_ERROR(guard(
          peer, "send to", [&] { check_completed(s->buf->waitSend(nullptr, comm_.timeout())); }));
    sums += comm_.wire_checksums() ? kChecksumBytes : 0;
  }
  b.side.clear();
  comm_.count(type_, b.pending_bytes, 0);
  comm_.count_checksum(sums, 0);
  b.pending_bytes = 0;
  return ok_status();
}

Status Stepper::exchange(uint64_t slot, SendBuffer& s, int to, size_t soff, size_t slen,
                         GlooBuffer& r, int from, size_t roff, size_t rlen) {
  if (rlen > 0) ZT_RETURN_IF_ERROR(post_recv(r, from, slot, roff, rlen));
  if (slen > 0) ZT_RETURN_IF_ERROR(post_send(s, to, slot, soff, slen));
  if (rlen > 0) ZT_RETURN_IF_ERROR(wait_recv(r, from, rlen));
  return drain(s, to);
}

}  // namespace zerotrain::comm
