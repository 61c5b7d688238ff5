// The CUDA device layer (see cuda_device.h).
#include "device/cuda/cuda_device.h"

#include <atomic>
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

namespace {
// Handles of the streams we created -> their allocator ids.
StreamRegistry& Streams() {
  static StreamRegistry* r = new StreamRegistry();  // never destroyed: streams may outlive main
  return *r;
}
uintptr_t Handle(cudaStream_t stream) { return reinterpret_cast<uintptr_t>(stream); }
CachingAllocator* ExistingAllocator(int index);  // below; nullptr when never created
}  // namespace

Stream::Stream(int device) : device_(device) {
  DeviceGuard guard(device);
  OF_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  id_ = Streams().Register(Handle(stream_));
}

Stream::~Stream() {
  if (!stream_) return;
  // StreamDestroyed's contract: the stream's work is complete. (Should this fail -- a sticky
  // error -- the blocks still go only to cudaFree, which synchronizes the device first.)
  if (cudaStreamSynchronize(stream_) != cudaSuccess) (void)cudaGetLastError();
  // Forgotten before cudaStreamDestroy: from then on the driver may give the handle to a new
  // stream, which must get a new id.
  Streams().Unregister(Handle(stream_));
  if (CachingAllocator* alloc = ExistingAllocator(device_)) alloc->StreamDestroyed(id_);
  (void)cudaStreamDestroy(stream_);
}

void Stream::Synchronize() const { OF_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

void Stream::SynchronizeNoThrow() const noexcept {
  if (cudaStreamSynchronize(stream_) != cudaSuccess) (void)cudaGetLastError();
}

void RequireDevicePointer(const void* data, int index) {
  cudaPointerAttributes attr{};
  const cudaError_t status = cudaPointerGetAttributes(&attr, data);
  if (status != cudaSuccess) (void)cudaGetLastError();
  const bool device_memory = status == cudaSuccess &&
                             (attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged);
  OF_REQUIRE(device_memory, "data ", data, " is not memory of CUDA device ", index, " (",
             status == cudaSuccess ? "host or unregistered memory" : cudaGetErrorString(status), ")");
  OF_REQUIRE(attr.type == cudaMemoryTypeManaged || attr.device == index, "data ", data, " is memory of CUDA device ",
             attr.device, ", not of device ", index);
}

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
// CaptureScopes alive on any device: the pinned staging pool frees nothing meanwhile.
std::atomic<int> g_captures{0};

// cudaMalloc / cudaFree and events on one device. Nothing but Allocate may throw (the rest runs
// from Free, i.e. from destructors). cudaFree synchronizes the device before freeing, which is what
// lets the allocator release blocks whose last users it cannot track (MemoryBackend's contract).
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
  // The event is created on our device (nullptr: our legacy default stream). A caller's stream on
  // another device makes cudaEventRecord fail (event and stream must share a context); the
  // allocator then returns the block with cudaFree, which waits for that stream's work too.
  Event RecordEvent(uintptr_t stream) override {
    int previous = 0;
    (void)cudaGetDevice(&previous);
    cudaEvent_t event = nullptr;
    const bool ok = cudaSetDevice(device_) == cudaSuccess &&
                    cudaEventCreateWithFlags(&event, cudaEventDisableTiming) == cudaSuccess &&
                    cudaEventRecord(event, reinterpret_cast<cudaStream_t>(stream)) == cudaSuccess;
    if (!ok) {
      (void)cudaGetLastError();
      if (event) (void)cudaEventDestroy(event);
      event = nullptr;
    }
    (void)cudaSetDevice(previous);
    return event;
  }
  bool EventDone(Event event) override {
    const cudaError_t status = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (status == cudaSuccess) return true;
    (void)cudaGetLastError();
    return status != cudaErrorNotReady;  // another error: the device runs nothing any more
  }
  void SynchronizeEvent(Event event) override {
    if (cudaEventSynchronize(static_cast<cudaEvent_t>(event)) != cudaSuccess) (void)cudaGetLastError();
  }
  void DestroyEvent(Event event) override { (void)cudaEventDestroy(static_cast<cudaEvent_t>(event)); }

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

CachingAllocator* ExistingAllocator(int index) {
  DeviceAllocators& a = Allocators();
  std::lock_guard<std::mutex> lock(a.mu);
  if (index < 0 || static_cast<size_t>(index) >= a.allocators.size()) return nullptr;
  return a.allocators[static_cast<size_t>(index)].get();
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
    // cudaFreeHost waits for its copy -- it synchronizes, so not while a graph is being captured
    // (on any thread): the pool then grows past kMaxBlocks until a later Release after the capture.
    while (blocks_.size() > kMaxBlocks && g_captures.load() == 0) blocks_.pop_front();
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

CachingAllocator::StreamId AllocatorStreamId(cudaStream_t stream) {
  if (stream == nullptr || stream == cudaStreamLegacy) return CachingAllocator::kDefaultStreamId;
  if (auto id = Streams().Find(Handle(stream))) return *id;
#if CUDART_VERSION >= 12000
  unsigned long long driver_id = 0;
  OF_CUDA_CHECK(cudaStreamGetId(stream, &driver_id));
  return CachingAllocator::kExternalStreamIdBit | static_cast<CachingAllocator::StreamId>(driver_id);
#else
  // Without cudaStreamGetId nothing names such a stream for good: its raw handle could be reused.
  Fail(ErrorCode::kInvalidArgument, "device memory for stream ", static_cast<const void*>(stream),
       ", which cuda::Stream did not create, needs CUDA 12 (cudaStreamGetId)");
#endif
}

CaptureScope::CaptureScope(int device) : allocator_(DeviceAllocator(device)) {
  allocator_.BeginCapture();
  g_captures.fetch_add(1);
}

CaptureScope::~CaptureScope() {
  g_captures.fetch_sub(1);
  allocator_.EndCapture();  // releases what had to wait for the last capture on this device
}

std::shared_ptr<Storage> AllocateDeviceStorage(size_t bytes, int device, cudaStream_t stream) {
  CachingAllocator& alloc = DeviceAllocator(device);
  void* p = alloc.Allocate(bytes, AllocatorStreamId(stream));
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

void RecordStream(const Tensor& t, cudaStream_t stream) {
  if (!t.defined() || !t.storage() || t.storage()->data() == nullptr) return;
  void* block = t.storage()->data();  // AllocateDeviceStorage's storage starts at its block
  std::vector<CachingAllocator*> allocators;
  {
    DeviceAllocators& a = Allocators();
    std::lock_guard<std::mutex> lock(a.mu);
    for (const auto& alloc : a.allocators)
      if (alloc) allocators.push_back(alloc.get());
  }
  for (CachingAllocator* alloc : allocators)
    if (alloc->RecordStream(block, Handle(stream))) return;
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

void CopyBytesToDeviceAsync(void* device_dst, const void* host_src, size_t bytes, cudaStream_t stream) {
  if (bytes > 0) OF_CUDA_CHECK(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, stream));
}

void CopyBytesToHost(void* host_dst, const void* device_src, size_t bytes, cudaStream_t stream) {
  if (bytes > 0) OF_CUDA_CHECK(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, stream));
  OF_CUDA_CHECK(cudaStreamSynchronize(stream));
}

int CurrentDevice() {
  int dev = 0;
  OF_CUDA_CHECK(cudaGetDevice(&dev));
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
