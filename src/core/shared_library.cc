// dlopen/dlsym behind Status (shared_library.h).
#include "core/shared_library.h"

#include <dlfcn.h>

namespace zerotrain {

void SharedLibrary::Closer::operator()(void* handle) const {
  if (handle != nullptr) dlclose(handle);
}

StatusOr<SharedLibrary> SharedLibrary::open(const std::string& name, const std::string& what) {
  SharedLibrary lib;
  lib.handle_.reset(dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!lib.handle_) {
    const char* why = dlerror();
    return unavailable(what + ": " + name + " could not be loaded (" +
                       (why != nullptr ? why : "dlopen failed") + ")");
  }
  lib.name_ = name;
  lib.what_ = what;
  return lib;
}

Status SharedLibrary::lookup(const char* symbol, void** out) const {
  dlerror();
  *out = dlsym(handle_.get(), symbol);
  if (*out == nullptr)
    return unavailable(what_ + ": " + name_ + " has no entry point " + symbol +
                       " (another library of that name, or a version too old)");
  return ok_status();
}

}  // namespace zerotrain
