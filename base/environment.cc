#include "base/environment.h"

#include <dlfcn.h>

#include <initializer_list>

extern char** environ;

namespace ringmaster {

char** ProcessEnvironment() {
  // The program's scope (dlopen(nullptr)), searched from the executable on: an executable with a copy of
  // libc's `__environ` (CPython's) has the live pointer there, while a library's own lookup scope may find
  // libc's stale original first (RTLD_DEEPBIND puts the library's dependencies, libc among them, first).
  char** env = environ;
  if (void* program = dlopen(nullptr, RTLD_LAZY | RTLD_NOLOAD)) {
    for (const char* name : {"__environ", "environ"}) {
      if (auto** found = static_cast<char***>(dlsym(program, name)); found != nullptr) {
        env = *found;
        break;
      }
    }
    dlclose(program);
  }
  static char* empty[] = {nullptr};
  return env != nullptr ? env : empty;
}

}  // namespace ringmaster
