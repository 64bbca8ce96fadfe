#include "kube/store.h"

#include <gtest/gtest.h>

#include <thread>

namespace ringmaster::kube {
namespace {

using nlohmann::json;

ObjectPtr Pod(const std::string& ns, const std::string& name, const std::string& owner, const std::string& rv = "1") {
  json p = {{"metadata", {{"namespace", ns}, {"name", name}, {"resourceVersion", rv}, {"labels", {{"app", name.substr(0, 1)}}}}}};
  if (!owner.empty()) p["metadata"]["ownerReferences"] = json::array({{{"uid", owner}, {"kind", "TrainingJob"}}});
  return std::make_shared<const json>(std::move(p));
}

TEST(StoreTest, IndexesByNamespaceOwnerAndLabelAndKeepsIndicesCurrent) {
  Store s({{"owner", IndexByOwnerUid()}, {"app", IndexByLabel("app")}});
  s.Upsert("a/p1", Pod("a", "p1", "job-1"));
  s.Upsert("a/p2", Pod("a", "p2", "job-1"));
  s.Upsert("b/q1", Pod("b", "q1", "job-2"));
  EXPECT_EQ(s.ByIndex(kNamespaceIndex, "a").size(), 2u);
  EXPECT_EQ(s.ByIndex("owner", "job-1").size(), 2u);
  EXPECT_EQ(s.ByIndex("app", "q").size(), 1u);
  EXPECT_TRUE(s.ByIndex("nope", "x").empty());
  // An update that changes the owner moves the object between index values.
  ObjectPtr old = s.Upsert("a/p2", Pod("a", "p2", "job-2", "2"));
  ASSERT_NE(old, nullptr);
  EXPECT_EQ((*old)["metadata"]["resourceVersion"], "1");
  EXPECT_EQ(s.IndexKeys("owner", "job-1"), std::vector<std::string>{"a/p1"});
  EXPECT_EQ(s.ByIndex("owner", "job-2").size(), 2u);
  EXPECT_NE(s.Erase("a/p1"), nullptr);
  EXPECT_EQ(s.Erase("a/p1"), nullptr);
  EXPECT_TRUE(s.ByIndex("owner", "job-1").empty());
  s.Replace({{"c/z", Pod("c", "z", "")}});
  EXPECT_EQ(s.Size(), 1u);
  EXPECT_TRUE(s.ByIndex(kNamespaceIndex, "a").empty());
  EXPECT_EQ(s.ByIndex(kNamespaceIndex, "c").size(), 1u);
}

TEST(StoreTest, ReadersKeepSnapshotsWhileWritersReplace) {
  Store s({{"owner", IndexByOwnerUid()}});
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; i < 2000; ++i) s.Upsert("ns/p" + std::to_string(i % 50), Pod("ns", "p" + std::to_string(i % 50), "j" + std::to_string(i % 3)));
    stop = true;
  });
  size_t seen = 0;
  while (!stop) {
    for (const auto& p : s.ByIndex("owner", "j1")) seen += (*p)["metadata"]["name"].get<std::string>().size() > 0;
    for (const auto& p : s.List()) seen += p != nullptr;
  }
  writer.join();
  EXPECT_EQ(s.Size(), 50u);
  EXPECT_GT(seen, 0u);
}

}  // namespace
}  // namespace ringmaster::kube
