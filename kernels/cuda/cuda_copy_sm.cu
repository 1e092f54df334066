// The SM copy of the cuda-copy kernel: a grid-stride loop of vector loads and stores, so the
// copy runs on the streaming multiprocessors instead of a copy engine.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/cuda_copy_sm.hpp"

namespace acceltune {
namespace {

template <typename V>
__global__ void copy_vectors(V* __restrict__ dst, const V* __restrict__ src, size_t n) {
  const size_t stride = static_cast<size_t>(blockDim.x) * gridDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) dst[i] = src[i];
}

// The bytes before the first aligned vector and after the last one.
__global__ void copy_bytes(unsigned char* dst, const unsigned char* src, size_t head, size_t tail_offset,
                           size_t tail) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < head) dst[i] = src[i];
  if (i < tail) dst[tail_offset + i] = src[tail_offset + i];
}

template <typename V>
cudaError_t launch(unsigned char* dst, const unsigned char* src, size_t n, int threads, int blocks,
                   cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  copy_vectors<V><<<blocks, threads, 0, stream>>>(reinterpret_cast<V*>(dst), reinterpret_cast<const V*>(src), n);
  return cudaGetLastError();
}

}  // namespace

int sm_copy_vector_bytes(const void* dst, const void* src, int vector_bytes) {
  const auto d = reinterpret_cast<uintptr_t>(dst);
  const auto s = reinterpret_cast<uintptr_t>(src);
  int v = vector_bytes;
  // Both pointers must reach a vector boundary after the same number of bytes.
  while (v > 1 && (d % static_cast<uintptr_t>(v)) != (s % static_cast<uintptr_t>(v))) v /= 2;
  return v;
}

cudaError_t sm_copy(void* dst, const void* src, size_t bytes, int threads_per_block, int vector_bytes, int max_blocks,
                    cudaStream_t stream) {
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  const int v = sm_copy_vector_bytes(dst, src, vector_bytes);
  const auto vb = static_cast<size_t>(v);
  size_t head = (vb - reinterpret_cast<uintptr_t>(d) % vb) % vb;
  if (head > bytes) head = bytes;
  const size_t vectors = (bytes - head) / vb;
  const size_t tail_offset = head + vectors * vb;
  const size_t tail = bytes - tail_offset;
  const size_t blocks_needed = (vectors + static_cast<size_t>(threads_per_block) - 1) / static_cast<size_t>(threads_per_block);
  int blocks = static_cast<int>(blocks_needed < static_cast<size_t>(max_blocks) ? blocks_needed : static_cast<size_t>(max_blocks));
  if (blocks < 1) blocks = 1;
  cudaError_t e = cudaSuccess;
  switch (v) {
    case 16: e = launch<uint4>(d + head, s + head, vectors, threads_per_block, blocks, stream); break;
    case 8: e = launch<uint2>(d + head, s + head, vectors, threads_per_block, blocks, stream); break;
    case 4: e = launch<unsigned int>(d + head, s + head, vectors, threads_per_block, blocks, stream); break;
    case 2: e = launch<unsigned short>(d + head, s + head, vectors, threads_per_block, blocks, stream); break;
    default: e = launch<unsigned char>(d + head, s + head, vectors, threads_per_block, blocks, stream); break;
  }
  if (e != cudaSuccess) return e;
  if (head > 0 || tail > 0) {
    const size_t edge = head > tail ? head : tail;
    copy_bytes<<<1, static_cast<unsigned int>(edge), 0, stream>>>(d, s, head, tail_offset, tail);
    e = cudaGetLastError();
  }
  return e;
}

}  // namespace acceltune
