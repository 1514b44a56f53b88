// The one place a communicator backend is chosen, by the device whose
// memory the collectives move: the CPU device's (host-addressable) memory
// goes through Gloo; a device with its own backend (CUDA: NCCL, comm/nccl/)
// will be chosen here, and the rest of the engine never names a backend.
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

// Unavailable naming the device when this build has no backend for it.
StatusOr<std::unique_ptr<Communicator>> create_communicator(const CommOptions& options,
                                                            device::Device& device);

}  // namespace zerotrain::comm
