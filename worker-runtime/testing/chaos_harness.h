// Test support for the elastic end-to-end tests: runs ringmaster-run over
// ringmaster-train-example (paths compiled in) and checks a run against a
// one-process run of the same data: float64 weights within 1e-9 relative, every
// sample id exactly once per epoch. Outputs go under a per-process temp root;
// the launcher's and workers' lines go to OUT.log and to the test log.
//
// Thread-safety: for one test thread (GoogleTest assertions).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ringmaster::runtime_testing {

inline constexpr int kSteps = 30, kSamples = 40, kBatch = 8;  // 6 epochs

// Where this test process writes (removed by the caller when it passed).
std::filesystem::path Root();

// Runs ringmaster-run over the example trainer with the standard data flags, then `worker_flags`; returns
// its exit status. The launcher gets strict timeouts (a 1.5 s heartbeat timeout, 30 s to the first
// heartbeat, a 90 s deadline; not a user's defaults) before `launcher_flags`, which may override them.
// `env` ("NAME=value ...", a value may be single-quoted; no spaces) is the launcher's extra
// environment, which its workers inherit.
int Launch(const std::string& out, const std::string& launcher_flags, const std::string& worker_flags = "",
           const std::string& env = "");
// Launch with `command` as the worker command line (e.g. the trainer behind a wrapper).
int LaunchCommand(const std::string& out, const std::string& launcher_flags, const std::vector<std::string>& command,
                  const std::string& env = "");
// The example trainer's command line with the standard data flags, then `worker_flags`.
std::vector<std::string> TrainerCommand(const std::string& worker_flags = "");

std::vector<double> ReadWeights(const std::string& path);
// The one-process CPU run of the trainer with the standard data flags, then `worker_flags` (as a chaos run's
// worker flags that change the result: --steps, --integer-grads, ...): its output directory (weights.txt,
// samples.log, commits.w0.log). Run once per distinct `worker_flags` in this process; a failed run is a
// test failure.
std::string ReferenceRun(const std::string& worker_flags = "");
// The weights of ReferenceRun(worker_flags).
const std::vector<double>& Reference(const std::string& worker_flags = "");
// The last generation the launcher published.
int64_t LastGeneration(const std::string& out);
// Weights and exactly-once samples of `out` against ReferenceRun(reference_flags): the weights within 1e-9
// relative, each epoch's sample ids those of the reference, each once (with the default flags: kSteps x kBatch
// / kSamples whole epochs of every id); the membership must have reached `min_generation` (the chaos really
// happened).
void ExpectMatchesReference(const std::string& out, int64_t min_generation = 1,
                            const std::string& reference_flags = "");
// How many lines of OUT.log contain `text`.
int CountInLog(const std::string& out, const std::string& text);

}  // namespace ringmaster::runtime_testing
