// The process-wide table of communicators that Boxing kernels look up by key.
#include <map>
#include <mutex>

#include "base/error.h"
#include "comm/communicator.h"

namespace oneflow {
namespace {

std::mutex g_registry_mutex;
std::map<std::string, std::shared_ptr<Communicator>>& Registry() {
  static auto* m = new std::map<std::string, std::shared_ptr<Communicator>>();
  return *m;
}

}  // namespace

void RegisterCommunicator(const std::string& key, std::shared_ptr<Communicator> comm) {
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  Registry()[key] = std::move(comm);
}

void UnregisterCommunicator(const std::string& key) {
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  Registry().erase(key);
}

std::shared_ptr<Communicator> FindCommunicator(const std::string& key) {
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  auto it = Registry().find(key);
  OF_CHECK(it != Registry().end(), kNotFound, "no communicator registered as '", key, "'");
  return it->second;
}

}  // namespace oneflow
