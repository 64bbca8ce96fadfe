#include "worker-runtime/comm/device_traffic.h"

namespace ringmaster::comm {

void DeviceTraffic::Add(int device, uint64_t bytes) {
  if (device < 0) return;
  std::lock_guard lock(mu_);
  bytes_[device] += bytes;
}

std::map<int, uint64_t> DeviceTraffic::Snapshot() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

}  // namespace ringmaster::comm
