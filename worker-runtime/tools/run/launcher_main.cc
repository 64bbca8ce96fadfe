// ringmaster-run: the local elastic launcher (what `horovodrun --min-np/--max-np`
// is), for a laptop and for the tests.
//
//   ringmaster-run --np 4 --min 2 --max 6 [--chaos SPEC] [--out DIR] -- ringmaster-train-example ...
//
// Starts workers on 127.0.0.1 (each with its own store port), keeps the
// membership file (launcher.h), removes workers that die (waitpid) or stop
// heart-beating (SIGSTOP: SIGKILLed after removal), injects chaos, prints
// every change, and at the end resolves the workers' sample journals into
// DIR/samples.log and copies a finisher's weights to DIR/weights.txt.
// Exit status: 0 when the training finished, 1 otherwise, 2 for a bad command line (--help: 0).
#include "base/cli.h"
#include "worker-runtime/tools/run/launcher.h"

int main(int argc, char** argv) {
  auto options = ringmaster::run::ParseLauncherOptions(argc, argv);
  if (auto exit_code = ringmaster::cli::ExitEarly("ringmaster-run", options, ringmaster::run::LauncherUsage)) {
    return *exit_code;
  }
  return ringmaster::run::RunLauncher(*options);
}
