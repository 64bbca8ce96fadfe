#include "worker-runtime/tools/launch/output_relay.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace ringmaster::launch {
namespace {

// A pipe with room for a few cut lines, closed when the test ends.
struct Pipe {
  int read = -1, write = -1;
  Pipe() {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    read = fds[0];
    write = fds[1];
    ::fcntl(write, F_SETPIPE_SZ, 1 << 20);
  }
  ~Pipe() {
    if (read >= 0) ::close(read);
    if (write >= 0) ::close(write);
  }
  void Put(const std::string& text) const { WriteAll(write, text); }
  std::string TakeAvailable() const {
    ::fcntl(read, F_SETFL, O_NONBLOCK);
    std::string out;
    char buf[65536];
    for (ssize_t n; (n = ::read(read, buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
    return out;
  }
  void CloseWrite() {
    ::close(write);
    write = -1;
  }
};

TEST(LaunchRelayTest, WholeLinesArePrefixedAndTheLastPartialOneIsEnded) {
  Pipe child, launcher;
  OutputRelay relay;
  relay.Add(child.read, launcher.write, "[7] ");
  child.read = -1;  // the relay's now
  child.Put("one\ntw");
  relay.Pump();
  EXPECT_EQ(launcher.TakeAvailable(), "[7] one\n") << "half a line waits for the rest";
  child.Put("o\n\nthree");
  child.CloseWrite();
  for (int i = 0; i < 100 && relay.open(); ++i) relay.Pump();
  EXPECT_FALSE(relay.open()) << "the end of the stream closes it";
  EXPECT_EQ(launcher.TakeAvailable(), "[7] two\n[7] \n[7] three\n");
}

TEST(LaunchRelayTest, StreamsKeepTheirOwnPartialLines) {
  Pipe a, b, launcher;
  OutputRelay relay;
  relay.Add(a.read, launcher.write, "[0] ");
  relay.Add(b.read, launcher.write, "[1] ");
  a.read = b.read = -1;
  a.Put("alpha-");
  b.Put("beta-");
  relay.Pump();
  EXPECT_EQ(launcher.TakeAvailable(), "");
  a.Put("end\n");
  b.Put("end\n");
  relay.Pump();
  EXPECT_EQ(launcher.TakeAvailable(), "[0] alpha-end\n[1] beta-end\n");
  b.Put("unfinished");
  relay.CloseAll();
  EXPECT_EQ(launcher.TakeAvailable(), "[1] unfinished\n") << "CloseAll writes what is left";
}

TEST(LaunchRelayTest, ALineWithoutNewlineIsCutAtTheLimit) {
  Pipe child, launcher;
  OutputRelay relay;
  relay.Add(child.read, launcher.write, "[2] ");
  child.read = -1;
  child.Put(std::string(OutputRelay::kMaxLine + 10, 'x') + "\nshort\n");
  child.CloseWrite();
  for (int i = 0; i < 100 && relay.open(); ++i) relay.Pump();
  EXPECT_EQ(launcher.TakeAvailable(),
            "[2] " + std::string(OutputRelay::kMaxLine, 'x') + "\n[2] " + std::string(10, 'x') + "\n[2] short\n");
}

}  // namespace
}  // namespace ringmaster::launch
