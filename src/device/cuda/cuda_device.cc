// The CUDA device layer (see cuda_device.h).
#include "device/cuda/cuda_device.h"

#include <cstring>
#include <deque>
#include <mutex>
#include <vector>

#include "device/cuda/cuda_check.h"

namespace oneflow::cuda {

int DeviceCount(std::string* why_none) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    if (why_none) *why_none = StrCat(cudaGetErrorName(status), ": ", cudaGetErrorString(status));
    return 0;
  }
  if (count == 0 && why_none) *why_none = "the CUDA runtime reports no device";
  return count;
}

void RequireDevice(int index) {
  std::string why;
  const int count = DeviceCount(&why);
  OF_CHECK(count > 0, kUnsupported, "no CUDA device: ", why);
  OF_REQUIRE(index >= 0 && index < count, "CUDA device ", index, " does not exist (", count, " device",
             count == 1 ? "" : "s", ")");
}

DeviceProps GetDeviceProps(int index) {
  RequireDevice(index);
  cudaDeviceProp p{};
  OF_CUDA_CHECK(cudaGetDeviceProperties(&p, index));
  DeviceProps out;
  out.name = p.name;
  out.major = p.major;
  out.minor = p.minor;
  out.total_memory = p.totalGlobalMem;
  out.multiprocessors = p.multiProcessorCount;
  out.l2_bytes = static_cast<size_t>(p.l2CacheSize);
  out.max_shared_per_block_optin = p.sharedMemPerBlockOptin;
  return out;
}

DeviceGuard::DeviceGuard(int index) {
  OF_CUDA_CHECK(cudaGetDevice(&previous_));
  if (index != previous_) OF_CUDA_CHECK(cudaSetDevice(index));
}

DeviceGuard::~DeviceGuard() { (void)cudaSetDevice(previous_); }

Stream::Stream(int device) : device_(device) {
  DeviceGuard guard(device);
  OF_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

Stream::~Stream() {
  if (stream_) (void)cudaStreamDestroy(stream_);
}

void Stream::Synchronize() const { OF_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

Event::Event(bool timing) {
  OF_CUDA_CHECK(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
}

Event::~Event() {
  if (event_) (void)cudaEventDestroy(event_);
}

void Event::Record(cudaStream_t stream) { OF_CUDA_CHECK(cudaEventRecord(event_, stream)); }
void Event::Wait(cudaStream_t stream) const { OF_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0)); }
void Event::Synchronize() const { OF_CUDA_CHECK(cudaEventSynchronize(event_)); }

bool Event::Done() const {
  const cudaError_t status = cudaEventQuery(event_);
  if (status == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  OF_CUDA_CHECK(status);
  return true;
}

float Event::ElapsedMs(const Event& start) const {
  float ms = 0.0f;
  OF_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, event_));
  return ms;
}

namespace {
thread_local cudaStream_t g_current_stream = nullptr;
thread_local std::vector<std::shared_ptr<Storage>>* g_keep_allocations = nullptr;

// cudaMalloc / cudaFree on one device. Free must not throw (it runs from destructors).
class CudaMemoryBackend final : public MemoryBackend {
 public:
  explicit CudaMemoryBackend(int device) : device_(device) {}
  void* Allocate(size_t bytes) override {
    DeviceGuard guard(device_);
    void* p = nullptr;
    const cudaError_t status = cudaMalloc(&p, bytes);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      return nullptr;  // the allocator empties its cache and retries
    }
    OF_CUDA_CHECK(status);
    return p;
  }
  void Free(void* ptr) override {
    int previous = 0;
    (void)cudaGetDevice(&previous);
    (void)cudaSetDevice(device_);
    (void)cudaFree(ptr);
    (void)cudaSetDevice(previous);
  }

 private:
  int device_;
};

struct DeviceAllocators {
  std::mutex mu;
  std::vector<std::unique_ptr<CudaMemoryBackend>> backends;
  std::vector<std::unique_ptr<CachingAllocator>> allocators;
};

DeviceAllocators& Allocators() {
  static DeviceAllocators* a = new DeviceAllocators();  // never destroyed: blocks may outlive main
  return *a;
}

// Pinned staging buffers, reused once the copy that last used them has completed (an event).
class PinnedStagingPool {
 public:
  struct Block {
    std::shared_ptr<Storage> storage;
    std::unique_ptr<Event> done;
  };
  Block Acquire(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = blocks_.begin(); it != blocks_.end(); ++it) {
      if (it->storage->bytes() >= bytes && it->done->Done()) {
        Block b = std::move(*it);
        blocks_.erase(it);
        return b;
      }
    }
    return Block{AllocatePinnedStorage(bytes), std::make_unique<Event>()};
  }
  void Release(Block b, cudaStream_t stream) {
    b.done->Record(stream);
    std::lock_guard<std::mutex> lock(mu_);
    blocks_.push_back(std::move(b));
    if (blocks_.size() > kMaxBlocks) blocks_.pop_front();  // cudaFreeHost waits for its copy
  }

 private:
  static constexpr size_t kMaxBlocks = 8;
  std::mutex mu_;
  std::deque<Block> blocks_;
};

PinnedStagingPool& StagingPool() {
  static PinnedStagingPool* pool = new PinnedStagingPool();
  return *pool;
}
}  // namespace

cudaStream_t CurrentStream() { return g_current_stream; }
void SetCurrentStream(cudaStream_t stream) { g_current_stream = stream; }

CachingAllocator& DeviceAllocator(int index) {
  RequireDevice(index);
  DeviceAllocators& a = Allocators();
  std::lock_guard<std::mutex> lock(a.mu);
  if (a.allocators.size() <= static_cast<size_t>(index)) {
    a.backends.resize(static_cast<size_t>(index) + 1);
    a.allocators.resize(static_cast<size_t>(index) + 1);
  }
  auto& slot = a.allocators[static_cast<size_t>(index)];
  if (!slot) {
    a.backends[static_cast<size_t>(index)] = std::make_unique<CudaMemoryBackend>(index);
    slot = std::make_unique<CachingAllocator>(*a.backends[static_cast<size_t>(index)]);
  }
  return *slot;
}

std::shared_ptr<Storage> AllocateDeviceStorage(size_t bytes, int device, cudaStream_t stream) {
  CachingAllocator& alloc = DeviceAllocator(device);
  void* p = alloc.Allocate(bytes, reinterpret_cast<CachingAllocator::StreamId>(stream));
  std::shared_ptr<Storage> storage = Storage::Borrow(p, bytes, [&alloc, p] { alloc.Free(p); });
  if (g_keep_allocations) g_keep_allocations->push_back(storage);
  return storage;
}

KeepAllocations::KeepAllocations(std::vector<std::shared_ptr<Storage>>* keep) : previous_(g_keep_allocations) {
  g_keep_allocations = keep;
}
KeepAllocations::~KeepAllocations() { g_keep_allocations = previous_; }

Tensor EmptyDeviceTensor(DType dtype, const Shape& shape, int device, cudaStream_t stream) {
  const size_t bytes = static_cast<size_t>(NumElements(shape)) * DTypeSize(dtype);
  return Tensor(dtype, shape, AllocateDeviceStorage(bytes, device, stream));
}

std::shared_ptr<Storage> AllocatePinnedStorage(size_t bytes) {
  void* p = nullptr;
  if (bytes > 0) OF_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
  return Storage::Borrow(p, bytes, [p] { if (p) (void)cudaFreeHost(p); });
}

Tensor EmptyPinnedTensor(DType dtype, const Shape& shape) {
  const size_t bytes = static_cast<size_t>(NumElements(shape)) * DTypeSize(dtype);
  return Tensor(dtype, shape, AllocatePinnedStorage(bytes));
}

void CopyAsync(const Tensor& dst, const Tensor& src, cudaStream_t stream) {
  OF_REQUIRE(dst.dtype() == src.dtype() && dst.nbytes() == src.nbytes(), "CUDA copy: destination ",
             DTypeName(dst.dtype()), ShapeToString(dst.shape()), " does not match source ", DTypeName(src.dtype()),
             ShapeToString(src.shape()));
  if (src.nbytes() == 0) return;
  OF_CUDA_CHECK(cudaMemcpyAsync(dst.raw(), src.raw(), src.nbytes(), cudaMemcpyDefault, stream));
}

Tensor ToDevice(const Tensor& host, int device, cudaStream_t stream) {
  Tensor dev = EmptyDeviceTensor(host.dtype(), host.shape(), device, stream);
  if (host.nbytes() == 0) return dev;
  PinnedStagingPool::Block staging = StagingPool().Acquire(host.nbytes());
  std::memcpy(staging.storage->data(), host.raw(), host.nbytes());
  OF_CUDA_CHECK(cudaMemcpyAsync(dev.raw(), staging.storage->data(), host.nbytes(), cudaMemcpyHostToDevice, stream));
  StagingPool().Release(std::move(staging), stream);
  return dev;
}

Tensor ToHost(const Tensor& dev, cudaStream_t stream) {
  Tensor host = Tensor::Uninitialized(dev.dtype(), dev.shape());
  if (dev.nbytes() == 0) return host;
  PinnedStagingPool::Block staging = StagingPool().Acquire(dev.nbytes());
  OF_CUDA_CHECK(cudaMemcpyAsync(staging.storage->data(), dev.raw(), dev.nbytes(), cudaMemcpyDeviceToHost, stream));
  OF_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::memcpy(host.raw(), staging.storage->data(), dev.nbytes());
  StagingPool().Release(std::move(staging), stream);
  return host;
}

}  // namespace oneflow::cuda
