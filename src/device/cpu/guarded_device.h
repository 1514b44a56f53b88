// The guarded CPU device: a proof, run in CPU CI, that nothing outside
// device/ dereferences device memory. Its allocations are real CPU memory
// handed out under a tagged address (bit 62 set: non-canonical on x86-64,
// so any load or store through it faults at once, on any thread); only its
// Device calls (copy, fill_zero, host_address) and its Ops, which untag
// every pointer and run the CPU kernels, reach the memory. A model, a ZeRO
// strategy or an engine that touches device memory any other way crashes
// under it; the ZeRO equivalence tests run in this mode (tests/zero/).
//
//   std::unique_ptr<device::Device> d = device::cpu::make_guarded_device();
//   model::ModuleOptions o{.device = d.get()};   // everything else unchanged
//
// Thread-safety: as CpuDevice.
#pragma once

#include <memory>

#include "device/device.h"

namespace zerotrain::device::cpu {

std::unique_ptr<Device> make_guarded_device();
// Whether p carries the guard tag (tests).
bool is_guarded_address(const void* p);

}  // namespace zerotrain::device::cpu
