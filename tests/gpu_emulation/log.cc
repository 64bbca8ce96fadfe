#include "tests/gpu_emulation/log.h"

#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "tests/gpu_emulation/device_memory.h"
#include "tests/gpu_emulation/settings.h"

namespace gpuemu {
namespace {

struct LastError {
  std::mutex mu;
  char text[1024] = "";
};

LastError& Last() {
  static LastError* last = new LastError;  // never freed: written from any thread, up to exit
  return *last;
}

}  // namespace

void Warn(int device, const char* format, ...) {
  char message[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof message, format, args);
  va_end(args);
  {
    LastError& last = Last();
    std::lock_guard<std::mutex> lock(last.mu);
    std::snprintf(last.text, sizeof last.text, "%s", message);
  }
  const Settings& s = GetSettings();
  if (s.quiet) return;
  if (device < 0) device = CurrentDevice();
  std::fprintf(stderr, "%s:%d:%ld [%d] NCCL WARN %s [emulated]\n", s.hostname.c_str(), static_cast<int>(::getpid()),
               static_cast<long>(::syscall(SYS_gettid)), device, message);
}

void Info(int device, const char* format, ...) {
  const char* level = std::getenv("NCCL_DEBUG");
  if (level == nullptr || (strcasecmp(level, "INFO") != 0 && strcasecmp(level, "TRACE") != 0)) return;
  char message[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof message, format, args);
  va_end(args);
  if (device < 0) device = CurrentDevice();
  const char* path = std::getenv("NCCL_DEBUG_FILE");
  FILE* out = path != nullptr && *path != '\0' ? std::fopen(path, "a") : nullptr;
  std::fprintf(out ? out : stderr, "%s:%d:%ld [%d] NCCL INFO %s [emulated]\n", GetSettings().hostname.c_str(),
               static_cast<int>(::getpid()), static_cast<long>(::syscall(SYS_gettid)), device, message);
  if (out) std::fclose(out);
}

const char* LastWarning() { return Last().text; }

}  // namespace gpuemu
