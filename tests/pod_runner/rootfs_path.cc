#include "tests/pod_runner/rootfs_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <deque>
#include <fstream>
#include <sstream>
#include <vector>

namespace ringmaster::testing {

namespace {

std::deque<std::string> Components(const std::string& path) {
  std::deque<std::string> out;
  std::stringstream ss(path);
  std::string part;
  while (std::getline(ss, part, '/')) {
    if (!part.empty() && part != ".") out.push_back(part);
  }
  return out;
}

}  // namespace

StatusOr<std::string> ResolveInRoot(const std::string& root, const std::string& path) {
  if (path.empty() || path[0] != '/') return InvalidArgumentError("path " + path + " is not absolute");
  std::deque<std::string> todo = Components(path);
  std::vector<std::string> done;
  int links = 0;
  while (!todo.empty()) {
    std::string part = todo.front();
    todo.pop_front();
    if (part == "..") {
      if (!done.empty()) done.pop_back();
      continue;
    }
    std::string inside;
    for (const auto& d : done) inside += "/" + d;
    inside += "/" + part;
    const std::string host = root + inside;
    struct stat st{};
    if (::lstat(host.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      if (++links > 40) return InvalidArgumentError("too many symbolic links in " + path + " inside " + root);
      char target[4096];
      ssize_t n = ::readlink(host.c_str(), target, sizeof(target) - 1);
      if (n < 0) return InternalError("readlink " + host);
      target[n] = '\0';
      std::deque<std::string> link = Components(target);
      if (target[0] == '/') done.clear();
      for (auto it = link.rbegin(); it != link.rend(); ++it) todo.push_front(*it);
      continue;
    }
    done.push_back(part);
  }
  std::string out;
  for (const auto& d : done) out += "/" + d;
  return out.empty() ? "/" : out;
}

std::string ReadFileInRoot(const std::string& root, const std::string& path) {
  StatusOr<std::string> inside = ResolveInRoot(root, path);
  if (!inside.ok()) return "";
  std::ifstream in(root + *inside, std::ios::binary);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ringmaster::testing
