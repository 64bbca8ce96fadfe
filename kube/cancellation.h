// Cancellation: a one-way switch that ends the waits of a client's requests -- client-go's context cancel.
//
// A RestClient owns one (RestClient::Cancel trips it): once tripped, a request waiting on the client's rate
// limiter, sleeping out a retry's backoff, or blocked on a connect or a read returns kCancelled promptly instead
// of retrying, and every later request returns kCancelled without being sent. It never resets: a cancelled client
// is done (a process shutting down cancels the clients whose work it abandons).
//
// Waits check it with SleepFor(); a wait it cannot interrupt itself (a socket read in another library) hangs a
// callback on it with OnCancel() for as long as the wait lasts.
// Thread-safety: thread-safe. Callbacks run under the switch's lock, on the thread that calls Cancel() (or on the
// registering thread when already cancelled): they must be short, must not block on other threads, and must not
// touch this Cancellation. A Registration is destroyed by the thread that made it; its destructor waits for a
// callback of it that is running.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

namespace ringmaster::kube {

class Cancellation {
 public:
  // While alive, keeps a callback registered with OnCancel(); unregisters it when destroyed.
  class Registration {
   public:
    Registration() = default;  // registers nothing
    Registration(Registration&& other) noexcept;
    Registration& operator=(Registration&& other) noexcept;
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;
    ~Registration();

   private:
    friend class Cancellation;
    Registration(const Cancellation* owner, uint64_t id) : owner_(owner), id_(id) {}
    void Reset();
    const Cancellation* owner_ = nullptr;  // null: nothing registered
    uint64_t id_ = 0;
  };

  Cancellation() = default;
  Cancellation(const Cancellation&) = delete;
  Cancellation& operator=(const Cancellation&) = delete;

  // Trips the switch: wakes every SleepFor(), runs the registered callbacks. Idempotent.
  void Cancel();
  bool cancelled() const;
  // Sleeps for `d`, less when cancelled meanwhile. Returns false when cancelled (before or during the sleep).
  bool SleepFor(std::chrono::nanoseconds d) const;
  // Runs `fn` once when Cancel() is called while the returned Registration lives (at once, here, when already
  // cancelled). The Registration must not outlive this Cancellation.
  // Const: an observer of the switch (a transport) may wait on it but not trip it.
  [[nodiscard]] Registration OnCancel(std::function<void()> fn) const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;                           // cancelled_ became true
  bool cancelled_ = false;                                       // guarded by mu_
  mutable uint64_t next_id_ = 0;                                 // guarded by mu_
  mutable std::map<uint64_t, std::function<void()>> callbacks_;  // guarded by mu_; emptied by Cancel()
};

}  // namespace ringmaster::kube
