// The one place a communicator backend is chosen, by the device whose
// memory the collectives move, and the rest of the engine never names a
// backend. The CPU device's (host-addressable) memory goes through Gloo. A
// CUDA device's goes through NCCL (comm/nccl/), unless
// ZEROTRAIN_COMM_BACKEND=gloo, the build has no NCCL, or two ranks share a
// GPU (comm/backend_choice.h: each rank publishes its host and PCI bus id
// through the store; rank 0 logs the choice and why): then through Gloo,
// with the GPU memory staged through host memory (comm/staging.h).
//
//   ZT_ASSIGN_OR_RETURN(CommOptions o, comm_options_from_env());
//   ZT_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> c, create_communicator(o, device));
//
// Thread-safety: a pure factory (the communicator it returns: as Communicator).
#pragma once

#include <memory>

#include "comm/communicator.h"
#include "device/device.h"

namespace zerotrain::comm {

// Unavailable naming the device when this build has no backend for it;
// InvalidArgument for a bad ZEROTRAIN_COMM_BACKEND, or nccl forced where
// ranks share a GPU.
StatusOr<std::unique_ptr<Communicator>> create_communicator(const CommOptions& options,
                                                            device::Device& device);

}  // namespace zerotrain::comm
