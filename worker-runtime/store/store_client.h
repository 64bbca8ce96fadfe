// A Store backed by the TCP store server (store_server.h): one authenticated
// connection bound to one membership generation.
//
// Thread-safety: safe for concurrent use; requests are serialized on the one
// connection.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "worker-runtime/store/protocol.h"
#include "worker-runtime/store/socket.h"
#include "worker-runtime/store/store.h"

namespace ringmaster::store {

struct StoreClientOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string secret;
  uint64_t generation = 0;
  uint32_t rank = 0;
  std::chrono::milliseconds connect_timeout{30000};  // retries refused connections until then
  std::chrono::milliseconds io_timeout{30000};       // per request, beyond the wait a Get asks for
};

class StoreClient : public Store {
 public:
  // Connects and authenticates both ways. Errors: Unauthenticated (wrong
  // secret on either side), Aborted (stale generation), Unavailable,
  // DeadlineExceeded.
  static StatusOr<std::unique_ptr<StoreClient>> Connect(StoreClientOptions options);

  Status Set(const std::string& key, const std::string& value) override;
  StatusOr<std::string> Get(const std::string& key, std::chrono::milliseconds timeout) override;
  Status Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  StatusOr<int64_t> Add(const std::string& key, int64_t delta) override;
  // Add, but a server that has not reached this client's generation yet holds it for up to `wait` until it
  // does (store_server.h) instead of answering Unavailable at once. Errors: as Add; Unavailable when the
  // server still has not reached the generation after `wait`.
  StatusOr<int64_t> AddOnceReached(const std::string& key, int64_t delta, std::chrono::milliseconds wait);

  uint64_t generation() const { return options_.generation; }

 private:
  StoreClient(StoreClientOptions options, Socket socket) : options_(std::move(options)), socket_(std::move(socket)) {}
  StatusOr<std::string> Call(store::protocol::Op op, const std::vector<std::string>& keys, const std::string& value,
                             std::chrono::milliseconds wait);

  // Constant after construction.
  const StoreClientOptions options_;

  std::mutex mu_;
  // Guarded by mu_.
  Socket socket_;
  bool broken_ = false;  // a request failed mid-frame: the stream is out of sync
};

}  // namespace ringmaster::store
