// The trainer's memory report: the Engine's per-rank accounting (device and
// host, by category) as the start-up block and as the compact field of
// every steps_per_print line.
//
//   out << format_memory_report(engine.memory(), cfg.zero.stage);
//   // [zerotrain] memory per rank: device 28.3 MiB (params 7.1 MiB, ...)
//   //             host 14.1 MiB (...), pinned 14.1 MiB; model states ... formula ...
//   line.memory = format_memory_compact(engine.memory());
//   // dev 28.3 (p 7.1 g 7.1 o 14.1 a 12.0) host 14.1 (m 3.5 o 7.1 g 3.5) MiB
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "engine/engine.h"

namespace zerotrain::train {

// Two lines, each starting "[zerotrain] " and ending in '\n': device
// categories (params, grads, master, optimizer, buffers, activations) and
// host ones with the pinned bytes ("nothing offloaded" when there are
// none), then model states against the stage's
// ZeRO formula.
std::string format_memory_report(const engine::MemoryReport& m, int stage);
// "dev T (p .. g .. m .. o .. b .. a ..) host T (..) MiB", categories that
// are zero left out, the host part only when something is offloaded.
// "[zerotrain] device memory: peak 97.3 MiB of a 128.0 MiB capacity\n"
// (the Device's own count of everything it allocated).
std::string format_device_peak(const engine::MemoryReport& m);
std::string format_memory_compact(const engine::MemoryReport& m);

}  // namespace zerotrain::train
