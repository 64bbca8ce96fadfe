#include "worker-runtime/tools/run/worker_table.h"

#include <gtest/gtest.h>

namespace ringmaster::run {
namespace {

std::unique_ptr<Worker> On(const std::string& id, const std::string& node, int device) {
  auto w = std::make_unique<Worker>();
  w->id = id;
  w->node = node;
  w->device = device;
  return w;
}

// ringmaster-run gives each worker process one GPU index on its node for its whole life
// (RINGMASTER_DEVICE): a newcomer takes the lowest index no running worker there holds, so a
// replacement lands on the GPU its dead predecessor freed, never on a survivor's.
TEST(WorkerTableTest, ANewcomerTakesTheLowestFreeDeviceOfItsNode) {
  WorkerTable table;
  EXPECT_EQ(table.FreeDevice("node0"), 0);
  table.Add(On("w0", "node0", 0));
  table.Add(On("w1", "node0", 1));
  table.Add(On("w2", "node0", 2));
  table.Add(On("w3", "node1", 0));
  EXPECT_EQ(table.FreeDevice("node0"), 3);
  EXPECT_EQ(table.FreeDevice("node1"), 1);
  table.ById("w1")->running = false;  // died: its GPU is free again
  table.Remove("w1");
  EXPECT_EQ(table.FreeDevice("node0"), 1);
  EXPECT_EQ(table.FreeDevice("node2"), 0);
}

}  // namespace
}  // namespace ringmaster::run
