// Connecting a Gloo TCP context's full mesh in parallel, without waiting for
// the event loop's ticks.
//
// Gloo's own gloo::rendezvous::Context::connectFullMesh (the Debian package's
// 2022-05 Gloo) connects the pairs one peer after another. Each pair has its
// own listening socket; of two ranks, the one whose address compares higher
// dials and the other waits in Pair::connect until the dial arrives, so rank i
// waits for peer j until j reaches i in its own loop: the ranks form a chain.
// Worse, a dialing pair first unregisters its listening socket from the
// device's event loop, which waits for the loop's next tick -- up to 10 ms
// when the loop is idle (its epoll_wait timeout). 8 ranks took ~73 ms.
//
// ConnectMesh builds the same context differently:
//   1. creates the transport context and one pair per peer, and publishes this
//      rank's pair addresses under the key "<rank>", in connectFullMesh's
//      layout (GlooSockets::Find reads them);
//   2. reads the peers' addresses, ring neighbours first, and starts the pairs
//      this rank dials at once, one thread each, as their addresses arrive.
//      From 4 ranks on, rank 0 reads every rank's key and publishes them all
//      under the key "gathered", which the others read once: ~4n store
//      requests instead of n(n-1), which one store server answers in turn;
//   3. while those dials are in flight, nudges the device's event loop (an
//      eventfd registered with it, written 50 us after the last dial started,
//      then twice as long apart each time) so that a dial's unregister waits
//      for a nudge rather than a 10 ms tick;
//   4. then waits, on the calling thread, for the pairs that peers dial (they
//      connect on their own event loop; nobody waits for anyone's loop order).
// The whole mesh is up after about one round of dials. It does not publish
// connectFullMesh's "rank_<r>" hostname keys (the TCP transport ignores the
// local rank they compute), so every rank of a context must use ConnectMesh.
//
// Timeouts and errors are Gloo's: a peer's addresses are waited for as the
// store's get waits (GlooStore: the communicator's timeout), and a pair's
// connect gives up after Gloo's own connect timeout. Any failure is returned
// as Aborted naming the peer ("reading rank 3's addresses: ...", "connecting
// to rank 3: ..."); the partly built context is torn down. A failed dial ends
// the connect at once (the pairs still waiting are closed), not at a timeout;
// when rank 0 cannot gather the addresses it publishes why, and the others
// fail at once with that reason ("rank 0 could not gather the addresses: ...").
//
// Ownership: the returned context owns its pairs and shares the device.
// Thread-safety: ConnectMesh may run concurrently with other ConnectMesh calls
// on the same device (each has its own transport context and nudger).
#pragma once

#include <gloo/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/device.h>

#include <chrono>
#include <memory>
#include <vector>

#include "base/status.h"

namespace ringmaster::gloo {

struct ConnectedMesh {
  std::shared_ptr<::gloo::Context> context;
  // published[i]: the value rank i published (its pairs' addresses); empty for this rank.
  std::vector<std::vector<char>> published;
};

struct MeshOptions {
  std::chrono::milliseconds timeout{30000};  // the context's timeout (collectives; Gloo's connect timeout)
  // Nudge the event loop while dials are in flight (step 3 above). Off only to measure what it saves.
  bool nudge_loop = true;
};

// Connects rank `rank` of `size` to every peer through `store` (keys "<rank>"; prefix them in the store
// adapter) on `device`. Errors: Aborted (a peer did not publish in time, a pair failed to connect),
// InvalidArgument (rank/size out of range).
StatusOr<ConnectedMesh> ConnectMesh(::gloo::rendezvous::Store& store,
                                    const std::shared_ptr<::gloo::transport::Device>& device, int rank, int size,
                                    const MeshOptions& options);

}  // namespace ringmaster::gloo
