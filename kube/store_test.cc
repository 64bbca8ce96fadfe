#include "kube/store.h"

#include <gtest/gtest.h>

#include <thread>

namespace ringmaster::kube {
namespace {

using nlohmann::json;

ObjectPtr Pod(const std::string& ns, const std::string& name, const std::string& owner, const std::string& rv = "1") {
  json p = {{"metadata",
             {{"namespace", ns}, {"name", name}, {"resourceVersion", rv}, {"labels", {{"app", name.substr(0, 1)}}}}}};
  if (!owner.empty()) p["metadata"]["ownerReferences"] = json::array({{{"uid", owner}, {"kind", "TrainingJob"}}});
  return std::make_shared<const json>(std::move(p));
}

class StoreIndexTest : public ::testing::TestWithParam<bool> {};  // the parameter: StoreOptions::packed

TEST_P(StoreIndexTest, IndexesByNamespaceOwnerAndLabelAndKeepsIndicesCurrent) {
  Store s({{"owner", IndexByOwnerUid()}, {"app", IndexByLabel("app")}}, StoreOptions{GetParam()});
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

TEST_P(StoreIndexTest, WithoutTheNamespaceIndexOnlyItsOwnIndexesAnswer) {
  StoreOptions options{GetParam()};
  options.namespace_index = false;
  Store s({{"owner", IndexByOwnerUid()}}, options);
  s.Upsert("a/p1", Pod("a", "p1", "job-1"));
  s.Upsert("a/p2", Pod("a", "p2", "job-1"));
  EXPECT_TRUE(s.ByIndex(kNamespaceIndex, "a").empty());
  EXPECT_EQ(s.IndexKeys("owner", "job-1"), (std::vector<std::string>{"a/p1", "a/p2"}));  // in key order
  EXPECT_NE(s.Erase("a/p1"), nullptr);
  EXPECT_EQ(s.IndexKeys("owner", "job-1"), std::vector<std::string>{"a/p2"});
}

TEST_P(StoreIndexTest, SwapExchangesObjectsAndIndices) {
  StoreOptions options{GetParam()};
  Store live({{"owner", IndexByOwnerUid()}}, options), staged({{"owner", IndexByOwnerUid()}}, options);
  live.Upsert("a/old", Pod("a", "old", "job-1"));
  staged.Upsert("a/new", Pod("a", "new", "job-2"));
  live.Swap(staged);
  EXPECT_EQ(live.Keys(), std::vector<std::string>{"a/new"});
  EXPECT_EQ(live.IndexKeys("owner", "job-2"), std::vector<std::string>{"a/new"});
  EXPECT_TRUE(live.ByIndex("owner", "job-1").empty());
  EXPECT_EQ((*live.Get("a/new"))["metadata"]["name"], "new");  // decoded with the table it was packed with
  EXPECT_EQ((*staged.Get("a/old"))["metadata"]["name"], "old");
  // Both go on working after the swap: writes pack with each store's own (swapped) table.
  live.Upsert("a/more", Pod("a", "more", "job-2"));
  staged.Upsert("a/other", Pod("a", "other", "job-1"));
  EXPECT_EQ(live.ByIndex("owner", "job-2").size(), 2u);
  EXPECT_EQ(staged.ByIndex("owner", "job-1").size(), 2u);
  EXPECT_EQ((*staged.Get("a/other"))["metadata"]["name"], "other");
}

INSTANTIATE_TEST_SUITE_P(ParsedAndPacked, StoreIndexTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Packed" : "Parsed"; });

TEST(PackedStoreTest, EveryKindOfValueComesBackExactly) {
  Store s({}, StoreOptions{true});
  json pod = {
      {"metadata", {{"namespace", "a"}, {"name", "p"}, {"resourceVersion", "42"}, {"annotations", json::object()}}},
      {"spec",
       {{"nodeName", "n\u00e9"},
        {"priority", -7},
        {"big", 18446744073709551615ull},
        {"ratio", 0.1},
        {"third", 1.0 / 3},
        {"whole", 2.0},
        {"tolerations", json::array()},
        {"hostNetwork", false},
        {"overhead", nullptr}}},
      {"status", {{"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
  s.Upsert("a/p", std::make_shared<const json>(pod));
  ObjectPtr got = s.Get("a/p");
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(*got, pod) << got->dump();
  EXPECT_EQ(got->dump(), pod.dump());  // same types too: 2.0 stays a float, 42 stays unsigned
  EXPECT_EQ(s.List().size(), 1u);
  EXPECT_EQ(*s.ByIndex(kNamespaceIndex, "a").at(0), pod);
  // Every read is the reader's own snapshot; the store's copy is unaffected by what readers keep.
  EXPECT_NE(s.Get("a/p").get(), got.get());
  ObjectPtr old = s.Upsert("a/p", Pod("a", "p", "", "43"));
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(*old, pod);
  EXPECT_EQ((*s.Get("a/p"))["metadata"]["resourceVersion"], "43");
  EXPECT_EQ(*got, pod);
}

// Readers iterate while a writer replaces objects (what TSan, label concurrency, checks). The writer starts
// only once the reader reads, and the reader reads until it has seen objects: on a loaded machine the writer
// once finished before the reader's first pass, and nothing overlapped.
TEST(StoreTest, ReadersKeepSnapshotsWhileWritersReplace) {
  Store s({{"owner", IndexByOwnerUid()}});
  std::atomic<bool> reading{false}, stop{false};
  std::thread writer([&] {
    while (!reading) std::this_thread::yield();
    for (int i = 0; i < 2000; ++i)
      s.Upsert("ns/p" + std::to_string(i % 50), Pod("ns", "p" + std::to_string(i % 50), "j" + std::to_string(i % 3)));
    stop = true;
  });
  size_t seen = 0;
  reading = true;
  while (!stop || seen == 0) {
    for (const auto& p : s.ByIndex("owner", "j1")) seen += (*p)["metadata"]["name"].get<std::string>().size() > 0;
    for (const auto& p : s.List()) seen += p != nullptr;
  }
  writer.join();
  EXPECT_EQ(s.Size(), 50u);
  EXPECT_EQ(s.ByIndex("owner", "j1").size(), 17u);  // p1, p4, ..., p49: the last write of each was to j1
}

}  // namespace
}  // namespace ringmaster::kube
