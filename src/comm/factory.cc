// Backend choice by device (see factory.h).
#include "comm/factory.h"

#include "comm/backend_choice.h"
#include "comm/gloo/gloo_communicator.h"
#include "comm/rendezvous.h"
#include "core/log.h"
#ifdef ZEROTRAIN_HAVE_NCCL
#include "comm/nccl/nccl_communicator.h"
#endif

namespace zerotrain::comm {
namespace {

#ifdef ZEROTRAIN_HAVE_NCCL
constexpr bool kNcclBuilt = true;
#else
constexpr bool kNcclBuilt = false;
#endif

StatusOr<std::unique_ptr<Communicator>> create_gpu_communicator(CommOptions options,
                                                                device::Device& device) {
  ZT_RETURN_IF_ERROR(validate_comm_options(options));
  ZT_ASSIGN_OR_RETURN(BackendPreference preference, backend_preference_from_env());
  std::vector<RankGpu> gpus;  // needed only where NCCL may be chosen
#ifdef ZEROTRAIN_HAVE_NCCL
  if (preference != BackendPreference::kGloo) {
    ZT_ASSIGN_OR_RETURN(RankGpu mine, rank_gpu_of(device));
    gpus = {mine};
    if (options.world_size > 1) {  // the backend then rendezvouses over the same store
      ZT_ASSIGN_OR_RETURN(options.store, connect_store(options));
      ZT_ASSIGN_OR_RETURN(gpus, gather_rank_gpus(*options.store, options, mine));
    }
  }
#endif
  ZT_ASSIGN_OR_RETURN(BackendChoice choice, choose_gpu_backend(preference, gpus, kNcclBuilt));
  if (options.rank == 0)
    log::info("communicator for ", device.name(), ": ", gpu_backend_name(choice.backend), " (",
              choice.reason, ")");
#ifdef ZEROTRAIN_HAVE_NCCL
  if (choice.backend == GpuBackend::kNccl) return create_nccl_communicator(options, device);
#endif
  return create_gloo_communicator(options);  // stages the GPU memory (comm/staging.h)
}

}  // namespace

StatusOr<std::unique_ptr<Communicator>> create_communicator(const CommOptions& options,
                                                            device::Device& device) {
  switch (device.type()) {
    case device::DeviceType::kCpu:
      return create_gloo_communicator(options);
    case device::DeviceType::kCuda:
      return create_gpu_communicator(options, device);
  }
  return unavailable("no communicator backend in this build for " + device.name());
}

}  // namespace zerotrain::comm
