// The process's live environment block, as `environ` holds it for the program.
#pragma once

namespace ringmaster {

// The process's environment (NUL-terminated "KEY=VALUE" strings), as setenv/putenv left it. Read through the
// program's `__environ`, found with dlsym in the program's scope, not through a direct reference: in a
// library loaded with RTLD_DEEPBIND (the Python package's native module, ringmaster/__init__.py) a direct
// reference binds to libc's own `environ`, which is stale when the executable holds a copy (CPython does).
// Never null.
// Not thread-safe against concurrent setenv, like `environ` itself.
char** ProcessEnvironment();

}  // namespace ringmaster
