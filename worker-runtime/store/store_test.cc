#include <gtest/gtest.h>

#include <future>
#include <random>
#include <thread>

#include "base/status_test_macros.h"
#include "worker-runtime/store/auth.h"
#include "worker-runtime/store/messages.h"
#include "worker-runtime/store/protocol.h"
#include "worker-runtime/store/store_client.h"
#include "worker-runtime/store/store_server.h"
#include "worker-runtime/store/wire.h"

namespace ringmaster::store {
namespace {

using namespace std::chrono_literals;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreServerOptions o;
    o.secret = "s3cret";
    o.generation = 5;
    o.io_timeout = 300ms;
    auto s = StoreServer::Start(o);
    ASSERT_OK(s) << s.status();
    server_ = std::move(s).value();
  }

  StatusOr<std::unique_ptr<StoreClient>> Connect(std::string secret = "s3cret", uint64_t generation = 5,
                                                 uint32_t rank = 1) {
    StoreClientOptions o;
    o.port = server_->port();
    o.secret = std::move(secret);
    o.generation = generation;
    o.rank = rank;
    o.connect_timeout = 2s;
    o.io_timeout = 2s;
    return StoreClient::Connect(o);
  }

  // A raw connection that completed the handshake honestly.
  Socket AuthenticatedRawSocket(StoreServer* server = nullptr) {
    auto s = Socket::Connect("127.0.0.1", (server ? server : server_.get())->port(), DeadlineIn(2s));
    EXPECT_OK(s);
    auto challenge = ReadFrame(*s, 1024, DeadlineIn(2s), 2s);
    EXPECT_OK(challenge);
    std::string server_nonce = challenge->substr(4);
    std::string client_nonce(kNonceBytes, 'c');
    WireWriter hello;
    hello.Bytes(client_nonce)
        .U64(5)
        .U32(9)
        .Bytes(HmacSha256("s3cret", store::protocol::ClientProofMessage(server_nonce, client_nonce, 5, 9)));
    EXPECT_OK(WriteFrame(*s, hello.data(), DeadlineIn(2s)));
    auto welcome = ReadFrame(*s, 1 << 16, DeadlineIn(2s), 2s);
    EXPECT_OK(welcome);
    EXPECT_EQ((*welcome)[0], 0);
    return std::move(s).value();
  }

  void ExpectServerStillWorks() {
    auto c = Connect();
    ASSERT_OK(c) << c.status();
    ASSERT_OK((*c)->Set("alive", "yes"));
    EXPECT_EQ((*c)->Get("alive", 1s).value(), "yes");
  }

  std::unique_ptr<StoreServer> server_;
};

TEST_F(StoreTest, SetGetWaitAdd) {
  auto a = Connect();
  auto b = Connect();
  ASSERT_OK(a) << a.status();
  ASSERT_OK(b) << b.status();
  ASSERT_OK((*a)->Set("k", std::string("v\0v", 3)));
  EXPECT_EQ((*b)->Get("k", 1s).value(), std::string("v\0v", 3));
  EXPECT_EQ((*a)->Add("n", 2).value(), 2);
  EXPECT_EQ((*b)->Add("n", 3).value(), 5);
  std::thread setter([&] {
    std::this_thread::sleep_for(50ms);
    ASSERT_OK((*a)->Set("late", "x"));
  });
  EXPECT_OK((*b)->Wait({"k", "late"}, 5s));
  setter.join();
}

TEST_F(StoreTest, GetTimesOut) {
  auto c = Connect();
  ASSERT_OK(c);
  auto start = Clock::now();
  auto v = (*c)->Get("never", 100ms);
  EXPECT_EQ(v.status().code(), StatusCode::kDeadlineExceeded) << v.status();
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_OK((*c)->Set("after-timeout", "ok"));  // connection still in sync
}

TEST_F(StoreTest, WrongSecretIsRefused) {
  auto c = Connect("wrong");
  EXPECT_EQ(c.status().code(), StatusCode::kUnauthenticated) << c.status();
  for (int i = 0; i < 200 && server_->rejected_handshakes() == 0; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(server_->rejected_handshakes(), 1u);
  ExpectServerStillWorks();
}

TEST_F(StoreTest, ClientRefusesServerWithOtherSecret) {
  StoreServerOptions o;
  o.secret = "other";
  o.generation = 5;
  auto other = StoreServer::Start(o);
  ASSERT_OK(other);
  StoreClientOptions co;
  co.port = (*other)->port();
  co.secret = "s3cret";
  co.generation = 5;
  auto c = StoreClient::Connect(co);
  EXPECT_EQ(c.status().code(), StatusCode::kUnauthenticated) << c.status();
}

// A store that goes away mid-handshake (rank 0 exiting at the job's end while a newcomer connects) is no verdict on
// the secret: the client says Unavailable, which a rendezvous retries, not Unauthenticated, which ends the worker.
TEST(StoreHandshakeTest, AStoreClosingDuringTheHandshakeIsUnavailableNotARefusal) {
  auto listener = Socket::Listen("127.0.0.1", 0);
  ASSERT_OK(listener);
  std::thread server([&] {
    auto conn = listener->Accept(DeadlineIn(5s));
    if (!conn.ok()) return;
    (void)WriteFrame(*conn, protocol::EncodeChallenge(std::string(32, 'n')), DeadlineIn(1s));
    char hello[8];
    (void)conn->ReadExact(hello, sizeof hello, DeadlineIn(1s));  // the Hello's start, then gone
    conn->Shutdown();
  });
  StoreClientOptions co;
  co.port = listener->LocalPort();
  co.secret = "s3cret";
  co.generation = 5;
  auto c = StoreClient::Connect(co);
  server.join();
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable) << c.status();
}

TEST_F(StoreTest, StaleGenerationIsRefused) {
  auto old_client = Connect("s3cret", 4);
  EXPECT_EQ(old_client.status().code(), StatusCode::kAborted) << old_client.status();

  auto current = Connect();
  ASSERT_OK(current);
  ASSERT_OK((*current)->Set("id", "gen5"));
  ASSERT_OK(server_->AdvanceGeneration(6));
  EXPECT_EQ((*current)->Set("id", "x").code(), StatusCode::kAborted);
  EXPECT_EQ((*current)->Get("id", 10ms).status().code(), StatusCode::kAborted);

  auto next = Connect("s3cret", 6);
  ASSERT_OK(next);
  EXPECT_EQ((*next)->Get("id", 10ms).status().code(), StatusCode::kDeadlineExceeded);  // gen 5 keys are gone
  EXPECT_FALSE(server_->AdvanceGeneration(6).ok());
}

TEST_F(StoreTest, WaitingClientIsReleasedByGenerationChange) {
  auto c = Connect();
  ASSERT_OK(c);
  std::thread advancer([&] {
    std::this_thread::sleep_for(50ms);
    ASSERT_OK(server_->AdvanceGeneration(7));
  });
  auto start = Clock::now();
  EXPECT_EQ((*c)->Get("never", 10s).status().code(), StatusCode::kAborted);
  EXPECT_LT(Clock::now() - start, 5s);
  advancer.join();
}

TEST_F(StoreTest, FutureGenerationIsUnavailable) {
  auto c = Connect("s3cret", 9);
  ASSERT_OK(c);
  EXPECT_EQ((*c)->Set("k", "v").code(), StatusCode::kUnavailable);
  EXPECT_EQ((*c)->AddOnceReached("n", 1, 20ms).status().code(), StatusCode::kUnavailable) << "not reached in time";
}

// Waits (at most 10 s) until `n` requests are held for a generation the server has not reached.
void WaitUntilHeld(const StoreServer& server, uint64_t n) {
  for (int i = 0; i < 2000 && server.held_requests() < n; ++i) std::this_thread::sleep_for(5ms);
}

// A member that starts attempt N+1 of a generation before rank 0 has opened it (rank 0 still inside attempt N)
// is held, not refused: served once the server reaches N+1 (it used to be answered Unavailable at once and poll).
TEST_F(StoreTest, ARequestForTheNextGenerationIsServedOnceTheServerReachesIt) {
  auto ahead = Connect("s3cret", 6);
  ASSERT_OK(ahead) << ahead.status();
  auto added = std::async(std::launch::async, [&] { return (*ahead)->AddOnceReached("joined", 1, 10s); });
  auto got = std::async(std::launch::async, [&] {
    auto other = Connect("s3cret", 6, 2);
    return other.ok() ? (*other)->Get("address", 10s) : StatusOr<std::string>(other.status());
  });
  WaitUntilHeld(*server_, 2);
  ASSERT_EQ(server_->held_requests(), 2u) << "not held: " << added.get().status() << " / " << got.get().status();
  ASSERT_OK(server_->AdvanceGeneration(6));
  auto joined = added.get();
  ASSERT_OK(joined) << joined.status();
  EXPECT_EQ(*joined, 1);
  ASSERT_OK((*ahead)->Set("address", "here"));  // the held Get now waits for its key, as any Get
  auto address = got.get();
  ASSERT_OK(address) << address.status();
  EXPECT_EQ(*address, "here");
  EXPECT_EQ(server_->held_requests(), 0u);
}

// A held request ends as soon as its generation can no longer come: the server moved past it (Aborted, as for
// any stale client) or stops (Unavailable).
TEST_F(StoreTest, AHeldRequestEndsWhenTheServerSkipsItsGeneration) {
  auto ahead = Connect("s3cret", 6);
  ASSERT_OK(ahead) << ahead.status();
  auto added = std::async(std::launch::async, [&] { return (*ahead)->AddOnceReached("joined", 1, 10s); });
  WaitUntilHeld(*server_, 1);
  ASSERT_EQ(server_->held_requests(), 1u) << added.get().status();
  ASSERT_OK(server_->AdvanceGeneration(7));
  EXPECT_EQ(added.get().status().code(), StatusCode::kAborted);

  auto next = Connect("s3cret", 8);
  ASSERT_OK(next) << next.status();
  auto held = std::async(std::launch::async, [&] { return (*next)->Get("k", 10s); });
  WaitUntilHeld(*server_, 1);
  ASSERT_EQ(server_->held_requests(), 1u) << held.get().status();
  server_.reset();
  EXPECT_EQ(held.get().status().code(), StatusCode::kUnavailable);
}

// The newest generation a client asked for is what a late rank 0 starts at (ElasticDriver::Rendezvous): a stale
// client does not count.
TEST_F(StoreTest, NewestRequestedGenerationCountsClientsAheadOnly) {
  EXPECT_EQ(server_->newest_requested(), 0u);
  ASSERT_OK(Connect("s3cret", 5));
  EXPECT_EQ(server_->newest_requested(), 5u);
  ASSERT_OK(Connect("s3cret", 9));
  EXPECT_EQ(server_->newest_requested(), 9u);
  EXPECT_EQ(Connect("s3cret", 4).status().code(), StatusCode::kAborted);
  ASSERT_OK(Connect("s3cret", 7));
  EXPECT_EQ(server_->newest_requested(), 9u);
}

TEST_F(StoreTest, GarbageBeforeHandshakeDoesNotHurtServer) {
  std::mt19937 rng(42);
  for (int i = 0; i < 20; ++i) {
    auto s = Socket::Connect("127.0.0.1", server_->port(), DeadlineIn(2s));
    ASSERT_OK(s);
    std::string junk(1 + rng() % 300, '\0');
    for (char& ch : junk) ch = static_cast<char>(rng());
    (void)s->WriteAll(junk, DeadlineIn(1s));
  }
  // A frame announcing 4 GiB, and a truncated frame that never completes.
  auto huge = Socket::Connect("127.0.0.1", server_->port(), DeadlineIn(2s));
  ASSERT_OK(huge);
  (void)huge->WriteAll(std::string("\xff\xff\xff\xff", 4), DeadlineIn(1s));
  auto truncated = Socket::Connect("127.0.0.1", server_->port(), DeadlineIn(2s));
  ASSERT_OK(truncated);
  (void)truncated->WriteAll(std::string("\x00\x00\x01\x00zz", 6), DeadlineIn(1s));
  ExpectServerStillWorks();
}

TEST_F(StoreTest, GarbledRequestsAfterHandshakeAreDropped) {
  std::mt19937 rng(7);
  for (int i = 0; i < 50; ++i) {
    Socket s = AuthenticatedRawSocket();
    std::string junk(rng() % 64, '\0');
    for (char& ch : junk) ch = static_cast<char>(rng());
    if (i % 2 == 0 && !junk.empty()) junk[0] = static_cast<char>(1 + rng() % 4);  // a plausible op
    ASSERT_OK(WriteFrame(s, junk, DeadlineIn(1s)));
    // Either a response or a closed connection; never a hang past the read deadline.
    auto r = ReadFrame(s, 1 << 20, DeadlineIn(2s), 2s);
    if (!r.ok()) {
      EXPECT_NE(r.status().code(), StatusCode::kDeadlineExceeded) << r.status();
    }
  }
  {
    // Announces a key count far beyond the limit.
    Socket s = AuthenticatedRawSocket();
    WireWriter w;
    w.U8(2).U32(0xffffffffu);
    ASSERT_OK(WriteFrame(s, w.data(), DeadlineIn(1s)));
    EXPECT_FALSE(ReadFrame(s, 1 << 20, DeadlineIn(2s), 2s).ok());
  }
  {
    // Stops half-way through a frame body: the server drops it after io_timeout.
    Socket s = AuthenticatedRawSocket();
    ASSERT_OK(s.WriteAll(std::string("\x00\x00\x00\x40\x01", 5), DeadlineIn(1s)));
    auto r = ReadFrame(s, 1 << 20, DeadlineIn(3s), 3s);
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status();
  }
  ExpectServerStillWorks();
}

TEST_F(StoreTest, OversizedValueIsRefusedByDroppingTheConnection) {
  StoreServerOptions o;
  o.secret = "s3cret";
  o.generation = 5;
  o.max_value_bytes = 1024;
  auto small = StoreServer::Start(o);
  ASSERT_OK(small);
  StoreClientOptions co;
  co.port = (*small)->port();
  co.secret = "s3cret";
  co.generation = 5;
  auto c = StoreClient::Connect(co);
  ASSERT_OK(c);
  EXPECT_FALSE((*c)->Set("big", std::string(4096, 'x')).ok());
  EXPECT_EQ((*c)->Set("k", "v").code(), StatusCode::kUnavailable);  // the connection is gone; says so
}

// Found in review while writing fuzz_store_server: a counter pushed past INT64_MAX overflowed (undefined
// behaviour) inside the server. Now the Add is refused and the counter keeps its value.
TEST_F(StoreTest, AddThatWouldOverflowIsRefused) {
  auto c = Connect();
  ASSERT_OK(c);
  ASSERT_OK((*c)->Add("n", INT64_MAX));
  auto over = (*c)->Add("n", 1);
  EXPECT_EQ(over.status().code(), StatusCode::kOutOfRange) << over.status();
  EXPECT_EQ((*c)->Add("n", 0).value(), INT64_MAX);
  ASSERT_OK((*c)->Add("m", INT64_MIN));
  EXPECT_EQ((*c)->Add("m", -1).status().code(), StatusCode::kOutOfRange);
}

// A timeout near 2^64 ms (the wire carries a u64) turned negative as a duration and overflowed the clock;
// now it is capped at max_wait like any long wait.
TEST_F(StoreTest, HugeWaitTimeoutIsCappedAtMaxWait) {
  StoreServerOptions o;
  o.secret = "s3cret";
  o.generation = 5;
  o.max_wait = 200ms;
  auto server = StoreServer::Start(o);
  ASSERT_OK(server);
  Socket s = AuthenticatedRawSocket(server->get());
  for (uint64_t timeout_ms : {uint64_t{1} << 63, ~uint64_t{0}}) {
    const auto start = Clock::now();
    ASSERT_OK(WriteFrame(s, store::protocol::EncodeRequest({store::protocol::Op::kGet, {"missing"}, "", timeout_ms}),
                         DeadlineIn(1s)));
    auto frame = ReadFrame(s, 1 << 16, DeadlineIn(5s), 5s);
    ASSERT_OK(frame);
    auto response = store::protocol::DecodeResponse(*frame, 1 << 16);
    ASSERT_OK(response);
    EXPECT_EQ(response->status.code(), StatusCode::kDeadlineExceeded) << response->status;
    EXPECT_NE(response->status.message().find("after 200 ms"), std::string::npos) << response->status;
    EXPECT_GE(Clock::now() - start, 150ms);
  }
}

}  // namespace
}  // namespace ringmaster::store
