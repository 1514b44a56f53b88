// The GPU job's backend decision (backend_choice.h).
#include "comm/backend_choice.h"

#include <map>
#include <utility>

#include "comm/rendezvous.h"
#include "core/env.h"

namespace zerotrain::comm {
namespace {

constexpr char kVariable[] = "ZEROTRAIN_COMM_BACKEND";

// The first two ranks that share a GPU, if any.
bool first_shared_gpu(const std::vector<RankGpu>& gpus, int* a, int* b) {
  std::map<std::pair<std::string, std::string>, int> first;
  for (int r = 0; r < static_cast<int>(gpus.size()); ++r) {
    auto [it, fresh] = first.emplace(std::make_pair(gpus[r].host, gpus[r].pci_bus_id), r);
    if (!fresh) {
      *a = it->second;
      *b = r;
      return true;
    }
  }
  return false;
}

}  // namespace

const char* gpu_backend_name(GpuBackend b) { return b == GpuBackend::kNccl ? "nccl" : "gloo"; }

StatusOr<BackendPreference> parse_backend_preference(std::string_view text) {
  if (text == "auto") return BackendPreference::kAuto;
  if (text == "nccl") return BackendPreference::kNccl;
  if (text == "gloo") return BackendPreference::kGloo;
  return invalid_argument(std::string(kVariable) + "=" + std::string(text) +
                          ": expected auto, nccl or gloo");
}

StatusOr<BackendPreference> backend_preference_from_env() {
  std::optional<std::string> text = env::get(kVariable);
  if (!text || text->empty()) return BackendPreference::kAuto;
  return parse_backend_preference(*text);
}

std::string encode_rank_gpu(const RankGpu& g) { return g.host + "\t" + g.pci_bus_id; }

StatusOr<RankGpu> decode_rank_gpu(std::string_view text) {
  const size_t tab = text.find('\t');
  if (tab == std::string_view::npos)
    return invalid_argument("malformed GPU record from the store: \"" + std::string(text) + "\"");
  return RankGpu{std::string(text.substr(0, tab)), std::string(text.substr(tab + 1))};
}

StatusOr<std::vector<RankGpu>> gather_rank_gpus(Store& store, const CommOptions& options,
                                                const RankGpu& mine) {
  ZT_ASSIGN_OR_RETURN(std::string prefix,
                      fresh_prefix(store, "zt/" + options.group + "/gpus/", options.rank));
  ZT_ASSIGN_OR_RETURN(std::vector<std::string> values,
                      exchange_with_ranks(store, prefix, options.rank, options.world_size,
                                          encode_rank_gpu(mine), options.timeout));
  std::vector<RankGpu> gpus;
  for (const std::string& v : values) {
    ZT_ASSIGN_OR_RETURN(RankGpu g, decode_rank_gpu(v));
    gpus.push_back(std::move(g));
  }
  return gpus;
}

StatusOr<BackendChoice> choose_gpu_backend(BackendPreference preference,
                                           const std::vector<RankGpu>& gpus, bool nccl_built) {
  int a = -1, b = -1;
  const bool shared = first_shared_gpu(gpus, &a, &b);
  std::string sharing;
  if (shared)
    sharing = "ranks " + std::to_string(a) + " and " + std::to_string(b) + " share GPU " +
              gpus[a].pci_bus_id + " on " + gpus[a].host;
  switch (preference) {
    case BackendPreference::kGloo:
      return BackendChoice{
          GpuBackend::kGloo,
          std::string(kVariable) + "=gloo: Gloo with GPU memory staged through host memory"};
    case BackendPreference::kNccl:
      if (!nccl_built)
        return unavailable(std::string(kVariable) + "=nccl, but this build has no NCCL");
      if (shared)
        return invalid_argument(std::string(kVariable) + "=nccl, but " + sharing +
                                " and NCCL needs one GPU per rank (unset it, or set gloo)");
      return BackendChoice{GpuBackend::kNccl, std::string(kVariable) + "=nccl"};
    case BackendPreference::kAuto:
      break;
  }
  if (!nccl_built)
    return BackendChoice{GpuBackend::kGloo,
                         "this build has no NCCL: Gloo with GPU memory staged through host memory"};
  if (shared)
    return BackendChoice{GpuBackend::kGloo,
                         sharing +
                             ", which NCCL refuses: Gloo with GPU memory staged through host "
                             "memory"};
  return BackendChoice{GpuBackend::kNccl, "every rank has a GPU of its own: NCCL"};
}

}  // namespace zerotrain::comm
