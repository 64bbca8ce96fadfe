#include "worker-runtime/nccl/gpu_libraries.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cstdlib>
#include <set>

namespace ringmaster::nccl {
namespace {

constexpr const char* kEmulationLibrary = "libringmaster_emulated_gpu.so";

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string DirName(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool Exists(const std::string& path) { return ::access(path.c_str(), R_OK) == 0; }

// dlopen, recording what failed in `tried`.
void* TryOpen(const std::string& name, int flags, std::string* tried) {
  ::dlerror();
  void* h = ::dlopen(name.c_str(), flags);
  if (h == nullptr) {
    const char* err = ::dlerror();
    *tried += "\n  " + name + ": " + (err ? err : "not loaded");
  }
  return h;
}

// The file a handle was opened from.
std::string PathOf(void* handle, const std::string& fallback) {
  struct link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && map->l_name[0]) return map->l_name;
  return fallback;
}

// The emulation library: configured, else beside the executable or beside this library.
StatusOr<LoadedLibrary> OpenEmulation(const GpuLibrarySearch& search, const char* kind) {
  std::vector<std::string> candidates;
  if (!search.emulation_library.empty()) {
    candidates.push_back(search.emulation_library);
  } else {
    char exe[4096];
    ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
      exe[n] = '\0';
      candidates.push_back(DirName(exe) + "/../lib/" + kEmulationLibrary);
      candidates.push_back(DirName(exe) + "/" + kEmulationLibrary);
    }
    Dl_info self{};
    if (::dladdr(reinterpret_cast<void*>(&OpenEmulation), &self) && self.dli_fname) {
      candidates.push_back(DirName(self.dli_fname) + "/" + kEmulationLibrary);
      candidates.push_back(DirName(self.dli_fname) + "/../lib/" + kEmulationLibrary);
    }
  }
  std::string tried;
  for (const auto& c : candidates) {
    if (!Exists(c)) {
      tried += "\n  " + c + ": no such file";
      continue;
    }
    if (void* h = TryOpen(c, RTLD_NOW | RTLD_GLOBAL, &tried)) return LoadedLibrary{h, c, true};
  }
  return FailedPreconditionError(std::string("RINGMASTER_EMULATED_GPUS=") + std::to_string(search.emulated_gpus) +
                                 " asks for the GPU emulation, but its library (" + kind + ") is not here:" + tried +
                                 "\nbuild it (the target ringmaster_emulated_gpu) or set "
                                 "RINGMASTER_GPU_EMULATION_LIBRARY to its path");
}

struct Candidates {
  std::vector<std::string> sonames;      // tried already-loaded, then through the linker's search
  std::vector<std::string> wheel_paths;  // relative to site-packages
  std::string configured;
  const char* env_name;
  const char* kind;
};

StatusOr<LoadedLibrary> Open(const GpuLibrarySearch& search, const Candidates& c) {
  if (search.emulated_gpus > 0) return OpenEmulation(search, c.kind);
  std::string tried;
  for (const auto& soname : c.sonames) {
    if (void* h = TryOpen(soname, RTLD_NOW | RTLD_NOLOAD, &tried)) return LoadedLibrary{h, PathOf(h, soname)};
  }
  // A path the user configured beats a guess from where torch's wheels are (a GPU machine showed why: a CUDA
  // runtime loaded from torch's site-packages made the guess pick that wheel's NCCL 2.28 over the configured 2.30).
  if (!c.configured.empty()) {
    if (void* h = TryOpen(c.configured, RTLD_NOW | RTLD_GLOBAL, &tried)) return LoadedLibrary{h, c.configured};
  }
  for (const auto& rel : c.wheel_paths) {
    for (const auto& path : TorchWheelCandidates(rel)) {
      if (!Exists(path)) continue;
      if (void* h = TryOpen(path, RTLD_NOW | RTLD_GLOBAL, &tried)) return LoadedLibrary{h, path};
    }
  }
  for (const auto& soname : c.sonames) {
    if (void* h = TryOpen(soname, RTLD_NOW | RTLD_GLOBAL, &tried)) return LoadedLibrary{h, PathOf(h, soname)};
  }
  return NotFoundError(std::string("no ") + c.kind + " library could be loaded; tried:" + tried +
                       "\ninstall torch with CUDA (its wheels bring NCCL and the CUDA runtime), or set " + c.env_name +
                       " to the library's path");
}

}  // namespace

GpuLibrarySearch GpuLibrarySearch::FromEnvironment() {
  GpuLibrarySearch s;
  s.emulated_gpus = std::atoi(Env("RINGMASTER_EMULATED_GPUS").c_str());
  s.emulation_library = Env("RINGMASTER_GPU_EMULATION_LIBRARY");
  s.nccl_library = Env("RINGMASTER_NCCL_LIBRARY");
  s.cudart_library = Env("RINGMASTER_CUDART_LIBRARY");
  return s;
}

std::vector<std::string> TorchWheelCandidates(const std::string& relative) {
  // site-packages folders that hold a loaded library (torch/lib/libc10.so, nvidia/.../lib/...).
  std::set<std::string> roots;
  ::dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* out) {
        std::string name = info->dlpi_name ? info->dlpi_name : "";
        for (const char* marker : {"/site-packages/", "/dist-packages/"}) {
          auto at = name.find(marker);
          if (at != std::string::npos) {
            static_cast<std::set<std::string>*>(out)->insert(name.substr(0, at + std::string(marker).size()));
          }
        }
        return 0;
      },
      &roots);
  std::vector<std::string> paths;
  for (const auto& root : roots) {
    if (Exists(root + "torch")) paths.push_back(root + relative);
  }
  return paths;
}

StatusOr<LoadedLibrary> OpenNccl(const GpuLibrarySearch& search) {
  return Open(
      search,
      Candidates{
          {"libnccl.so.2"}, {"nvidia/nccl/lib/libnccl.so.2"}, search.nccl_library, "RINGMASTER_NCCL_LIBRARY", "NCCL"});
}

StatusOr<LoadedLibrary> OpenCudaRuntime(const GpuLibrarySearch& search) {
  return Open(search, Candidates{{"libcudart.so.13", "libcudart.so.12"},
                                 {"nvidia/cu13/lib/libcudart.so.13", "nvidia/cuda_runtime/lib/libcudart.so.12"},
                                 search.cudart_library,
                                 "RINGMASTER_CUDART_LIBRARY",
                                 "CUDA runtime"});
}

}  // namespace ringmaster::nccl
