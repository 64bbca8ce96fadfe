#include "worker-runtime/elastic/sample_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace ringmaster::elastic {

StatusOr<SampleJournal> SampleJournal::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return UnavailableError("open " + path + ": " + std::strerror(errno));
  return SampleJournal(fd);
}

SampleJournal::~SampleJournal() {
  if (fd_ >= 0) ::close(fd_);
}

Status SampleJournal::Append(const std::string& text) {
  ssize_t n = ::write(fd_, text.data(), text.size());
  if (n != static_cast<ssize_t>(text.size()))
    return UnavailableError(std::string("journal write: ") + std::strerror(errno));
  return Status::Ok();
}

Status SampleJournal::Attempt(int64_t generation, int64_t step, uint64_t epoch, const std::vector<uint64_t>& samples) {
  std::string text;
  for (uint64_t s : samples) {
    text += "A " + std::to_string(generation) + " " + std::to_string(step) + " " + std::to_string(epoch) + " " +
            std::to_string(s) + "\n";
  }
  return text.empty() ? Status::Ok() : Append(text);
}

Status SampleJournal::Restored(int64_t generation, int64_t step) {
  return Append("R " + std::to_string(generation) + " " + std::to_string(step) + "\n");
}

StatusOr<std::vector<ResolvedSample>> ResolveJournals(const std::vector<std::string>& paths, int64_t final_step) {
  struct Attempt {
    int64_t generation, step;
    uint64_t epoch, sample;
  };
  std::vector<Attempt> attempts;
  std::map<int64_t, int64_t> restored;  // generation -> step
  for (const auto& path : paths) {
    std::ifstream in(path);
    if (!in) return UnavailableError("cannot read journal " + path);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      char kind = 0;
      fields >> kind;
      if (kind == 'A') {
        Attempt a{};
        if (fields >> a.generation >> a.step >> a.epoch >> a.sample) attempts.push_back(a);
      } else if (kind == 'R') {
        int64_t g = 0, s = 0;
        if (fields >> g >> s) restored[g] = s;
      }
    }
  }
  // min_later[g]: the smallest restore step of any generation after g.
  std::vector<ResolvedSample> out;
  for (const auto& a : attempts) {
    if (a.step >= final_step) continue;
    bool rolled_back = false;
    for (auto it = restored.upper_bound(a.generation); it != restored.end(); ++it) {
      if (it->second <= a.step) {
        rolled_back = true;
        break;
      }
    }
    if (!rolled_back) out.push_back({a.step, a.epoch, a.sample});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const ResolvedSample& x, const ResolvedSample& y) { return x.step < y.step; });
  return out;
}

}  // namespace ringmaster::elastic
