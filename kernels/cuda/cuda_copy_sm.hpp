// The SM copy of the cuda-copy kernel, built by nvcc (kernels/cuda_copy_sm.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace acceltune {

// The vector width the copy of dst <- src can use: the widest power of two up to vector_bytes at
// which both pointers are equally misaligned (then a few head bytes align both).
int sm_copy_vector_bytes(const void* dst, const void* src, int vector_bytes);

// Enqueues the copy of `bytes` on `stream`; dst and src are device-accessible pointers.
cudaError_t sm_copy(void* dst, const void* src, size_t bytes, int threads_per_block, int vector_bytes, int max_blocks,
                    cudaStream_t stream);

}  // namespace acceltune
