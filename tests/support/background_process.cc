#include "tests/support/background_process.h"

#include <fstream>
#include <sstream>

namespace ringmaster::testing {

BackgroundProcess::~BackgroundProcess() { Kill(); }

Status BackgroundProcess::Start(const std::vector<std::string>& argv, const std::string& log_file) {
  if (argv.empty()) return InvalidArgumentError("BackgroundProcess: empty argv");
  log_file_ = log_file;
  SpawnOptions options;
  options.argv = argv;
  options.out = options.err = Redirect::AppendTo(log_file);
  RINGMASTER_ASSIGN_OR_RETURN(Subprocess process, Subprocess::Start(options));
  process_ = std::move(process);
  return Status::Ok();
}

bool BackgroundProcess::Running() { return process_ && !process_->Poll().has_value(); }

int BackgroundProcess::Stop(std::chrono::milliseconds grace) {
  if (!process_) return -1;
  int code = process_->Terminate(grace).ShellCode();
  process_.reset();
  return code;
}

void BackgroundProcess::Kill() {
  if (!process_) return;
  process_->Kill();
  process_.reset();
}

std::string BackgroundProcess::Log() const {
  std::ifstream in(log_file_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ringmaster::testing
