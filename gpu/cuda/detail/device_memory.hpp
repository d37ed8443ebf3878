// Device memory and copies for the CUDA helper's host code (internal to gpu/cuda: it includes
// the CUDA runtime, which only llmrepro-gpu-cuda links).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace llmrepro::gpu::cuda {

inline core::Error cuda_error(const char* what, int status) {
  return core::make_error(core::ErrorCode::environment,
                          std::string(what) + ": " +
                              cudaGetErrorString(static_cast<cudaError_t>(status)));
}

// Device memory released on scope exit; empty (false) when cudaMalloc failed.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) {
    if (cudaMalloc(&m_ptr, bytes == 0 ? 1 : bytes) != cudaSuccess) m_ptr = nullptr;
  }
  ~DeviceBuffer() {
    if (m_ptr) cudaFree(m_ptr);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept : m_ptr(other.m_ptr) { other.m_ptr = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      if (m_ptr) cudaFree(m_ptr);
      m_ptr = other.m_ptr;
      other.m_ptr = nullptr;
    }
    return *this;
  }
  void* get() const { return m_ptr; }
  float* floats() const { return static_cast<float*>(m_ptr); }
  explicit operator bool() const { return m_ptr != nullptr; }

private:
  void* m_ptr = nullptr;
};

inline core::Error allocation_error() {
  return core::make_error(core::ErrorCode::environment, "cudaMalloc failed");
}

inline core::Result<void> upload(void* device, const void* host, std::size_t bytes) {
  const int status = static_cast<int>(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice));
  if (status != 0) return cuda_error("copy to device", status);
  return {};
}

inline core::Result<std::vector<unsigned char>> download(const void* device, std::size_t bytes) {
  std::vector<unsigned char> host(bytes);
  const int status =
      static_cast<int>(cudaMemcpy(host.data(), device, bytes, cudaMemcpyDeviceToHost));
  if (status != 0) return cuda_error("copy from device", status);
  return host;
}

inline core::Result<std::vector<float>> download_floats(const float* device, std::size_t n) {
  auto bytes = download(device, n * sizeof(float));
  if (!bytes) return bytes.error();
  std::vector<float> values(n);
  std::memcpy(values.data(), bytes->data(), n * sizeof(float));
  return values;
}

// A device buffer holding a copy of `values`; empty on failure (reported through `error`).
inline core::Result<void> upload_floats(DeviceBuffer& buffer, const float* values, std::size_t n) {
  if (!buffer) return allocation_error();
  return upload(buffer.get(), values, n * sizeof(float));
}

} // namespace llmrepro::gpu::cuda
