// Backend choice by device (see factory.h).
#include "comm/factory.h"

#include "comm/gloo/gloo_communicator.h"

namespace zerotrain::comm {

StatusOr<std::unique_ptr<Communicator>> create_communicator(const CommOptions& options,
                                                            device::Device& device) {
  switch (device.type()) {
    case device::DeviceType::kCpu:
      return create_gloo_communicator(options);
    case device::DeviceType::kCuda:
      break;
  }
  return unavailable("no communicator backend in this build for " + device.name() +
                     " (the NCCL backend comes with the CUDA device)");
}

}  // namespace zerotrain::comm
