// SharedLibrary: a library loaded at run time (dlopen) and its entry points
// (dlsym), for the vendor libraries zerotrain uses only on some machines:
// NVML (`zerotrain gpus`), cuBLASLt and NCCL (the CUDA backend). Loading
// them on first use keeps a CPU run from mapping hundreds of MB of GPU
// libraries it never calls, and lets a CUDA build start where they are
// absent; the error then names the library and dlerror's reason.
//
//   ZT_ASSIGN_OR_RETURN(SharedLibrary lib, SharedLibrary::open("libnccl.so.2", "NCCL"));
//   decltype(&ncclGetVersion) get_version = nullptr;
//   ZT_RETURN_IF_ERROR(lib.bind("ncclGetVersion", &get_version));
//
// Thread-safety: open and bind may run on any thread; a SharedLibrary is
// move-only and unloads (dlclose) when the last move of it is destroyed.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"

namespace zerotrain {

class SharedLibrary {
 public:
  // Unavailable "<what>: <name> could not be loaded (<dlerror>)".
  static StatusOr<SharedLibrary> open(const std::string& name, const std::string& what);

  // *out = the entry point `symbol`; Unavailable naming it and the library.
  template <typename Fn>
  Status bind(const char* symbol, Fn* out) const {
    void* p = nullptr;
    ZT_RETURN_IF_ERROR(lookup(symbol, &p));
    *out = reinterpret_cast<Fn>(p);
    return ok_status();
  }
  const std::string& name() const { return name_; }

 private:
  struct Closer {
    void operator()(void* handle) const;
  };
  Status lookup(const char* symbol, void** out) const;

  std::unique_ptr<void, Closer> handle_;
  std::string name_, what_;
};

}  // namespace zerotrain
