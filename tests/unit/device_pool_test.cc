// Which intra-op pool a distributed session or trainer gives each of this process's devices
// (engine/distributed_session.h, DevicePool): an environment's shared pool serves a process that
// runs one device of the placement (a Gloo rank); in-process virtual devices run at once, so each
// keeps threads_per_device threads of its own.
#include <gtest/gtest.h>

#include "base/thread_pool.h"
#include "engine/distributed_session.h"

namespace oneflow {
namespace {

TEST(DevicePool, TheSharedPoolServesASingleLocalDevice) {
  DistributedOptions d;
  d.threads_per_device = 3;
  d.shared_pool = std::make_shared<ThreadPool>(2);
  EXPECT_EQ(DevicePool(d, 1), d.shared_pool);
  const std::shared_ptr<ThreadPool> own = DevicePool(d, 4);
  ASSERT_NE(own, nullptr);
  EXPECT_NE(own, d.shared_pool);
  EXPECT_EQ(own->num_threads(), 3);
  d.shared_pool = nullptr;
  EXPECT_EQ(DevicePool(d, 1)->num_threads(), 3);
}

}  // namespace
}  // namespace oneflow
