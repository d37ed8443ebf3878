#include "gpu/cuda/device_ops.hpp"

#include "gpu/cuda/detail/device_memory.hpp"
#include "gpu/cuda/probe_kernels.hpp"

namespace llmrepro::gpu::cuda {

namespace {

int precision_code(numerics::Precision precision) { return static_cast<int>(precision); }

int scheme_code(numerics::PartialScheme scheme) {
  switch (scheme) {
  case numerics::PartialScheme::compute_type: return 0;
  case numerics::PartialScheme::output_type: return 1;
  case numerics::PartialScheme::inplace: return 2;
  }
  return 0;
}

core::Result<void> finish(const char* what, int status) {
  if (status == 0) status = static_cast<int>(cudaDeviceSynchronize());
  if (status != 0) return cuda_error(what, status);
  return {};
}

} // namespace

DeviceOps::DeviceOps(int sm_count) : m_sm_count(sm_count) {}

std::string DeviceOps::name() const { return "cuda"; }

int DeviceOps::sm_count() const { return m_sm_count; }

core::Result<SplitKOutputs> DeviceOps::split_k(const float* x, const float* weights,
                                               std::size_t outputs, std::size_t k, int splits,
                                               numerics::PartialScheme scheme,
                                               numerics::Precision precision) {
  const std::size_t s = splits < 1 ? 1 : static_cast<std::size_t>(splits);
  DeviceBuffer x_device(k * 4);
  DeviceBuffer w_device(outputs * k * 4);
  DeviceBuffer partials(outputs * s * 4);
  DeviceBuffer out(outputs * 4);
  DeviceBuffer out_fp32(outputs * 4);
  if (!partials || !out || !out_fp32) return allocation_error();
  LLMREPRO_TRY(upload_floats(x_device, x, k));
  LLMREPRO_TRY(upload_floats(w_device, weights, outputs * k));
  const int n = static_cast<int>(outputs);
  int status = launch_split_k_partials(x_device.floats(), w_device.floats(), partials.floats(), n,
                                       static_cast<int>(k), static_cast<int>(s));
  if (status == 0)
    status = launch_combine_partials(partials.floats(), out.floats(), out_fp32.floats(), n,
                                     static_cast<int>(s), scheme_code(scheme),
                                     precision_code(precision));
  LLMREPRO_TRY(finish("split-K kernels", status));
  auto rounded = download_floats(out.floats(), outputs);
  auto unrounded = download_floats(out_fp32.floats(), outputs);
  if (!rounded) return rounded.error();
  if (!unrounded) return unrounded.error();
  return SplitKOutputs{std::move(*rounded), std::move(*unrounded)};
}

core::Result<NormOutputs> DeviceOps::rmsnorm(const float* x, const float* residual,
                                             const float* weight, std::size_t rows,
                                             std::size_t hidden, numerics::RowReduction order,
                                             float eps, numerics::Precision precision) {
  const std::size_t splits = order.row_splits < 1 ? 1 : static_cast<std::size_t>(order.row_splits);
  const std::size_t total = rows * hidden;
  DeviceBuffer x_device(total * 4);
  DeviceBuffer residual_device(total * 4);
  DeviceBuffer weight_device(hidden * 4);
  DeviceBuffer summed(total * 4);
  DeviceBuffer chunk_sums(rows * splits * 4);
  DeviceBuffer out(total * 4);
  DeviceBuffer inv_rms(rows * 4);
  if (!summed || !chunk_sums || !out || !inv_rms) return allocation_error();
  LLMREPRO_TRY(upload_floats(x_device, x, total));
  LLMREPRO_TRY(upload_floats(residual_device, residual, total));
  LLMREPRO_TRY(upload_floats(weight_device, weight, hidden));
  const int status =
      launch_rmsnorm(x_device.floats(), residual_device.floats(), weight_device.floats(),
                     summed.floats(), chunk_sums.floats(), out.floats(), inv_rms.floats(),
                     static_cast<int>(rows), static_cast<int>(hidden), order.lanes,
                     static_cast<int>(splits), eps, precision_code(precision));
  LLMREPRO_TRY(finish("RMSNorm kernels", status));
  auto out_host = download_floats(out.floats(), total);
  auto inv_host = download_floats(inv_rms.floats(), rows);
  if (!out_host) return out_host.error();
  if (!inv_host) return inv_host.error();
  return NormOutputs{std::move(*out_host), std::move(*inv_host)};
}

core::Result<AttentionOutputs> DeviceOps::attention(const AttentionInputs& in,
                                                    const std::vector<std::size_t>& bounds) {
  if (bounds.size() < 2)
    return core::make_error(core::ErrorCode::internal, "attention needs at least one split");
  const std::size_t splits = bounds.size() - 1;
  const std::size_t kv_elements = in.kv_heads * in.length * in.head_dim;
  const std::size_t q_elements = in.query_heads * in.head_dim;
  DeviceBuffer q(q_elements * 4);
  DeviceBuffer keys(kv_elements * 4);
  DeviceBuffer values(kv_elements * 4);
  DeviceBuffer bounds_device(bounds.size() * sizeof(long long));
  DeviceBuffer scores(in.query_heads * in.length * 4);
  DeviceBuffer split_max(in.query_heads * splits * 4);
  DeviceBuffer split_sum(in.query_heads * splits * 4);
  DeviceBuffer split_out(in.query_heads * splits * in.head_dim * 4);
  DeviceBuffer out(q_elements * 4);
  DeviceBuffer lse(in.query_heads * 4);
  if (!bounds_device || !scores || !split_max || !split_sum || !split_out || !out || !lse)
    return allocation_error();
  LLMREPRO_TRY(upload_floats(q, in.q, q_elements));
  LLMREPRO_TRY(upload_floats(keys, in.keys, kv_elements));
  LLMREPRO_TRY(upload_floats(values, in.values, kv_elements));
  const std::vector<long long> bounds_host(bounds.begin(), bounds.end());
  LLMREPRO_TRY(
      upload(bounds_device.get(), bounds_host.data(), bounds_host.size() * sizeof(long long)));
  const int status = launch_attention_decode(
      q.floats(), keys.floats(), values.floats(),
      static_cast<const long long*>(bounds_device.get()), static_cast<int>(splits), scores.floats(),
      split_max.floats(), split_sum.floats(), split_out.floats(), out.floats(), lse.floats(),
      static_cast<int>(in.query_heads), static_cast<int>(in.kv_heads), static_cast<int>(in.length),
      static_cast<int>(in.head_dim), in.scale);
  LLMREPRO_TRY(finish("attention kernels", status));
  auto out_host = download_floats(out.floats(), q_elements);
  auto lse_host = download_floats(lse.floats(), in.query_heads);
  if (!out_host) return out_host.error();
  if (!lse_host) return lse_host.error();
  return AttentionOutputs{std::move(*out_host), std::move(*lse_host)};
}

core::Result<FlipLogits> DeviceOps::flip_logits(const FlipInputs& in, numerics::Precision logits,
                                                bool drift) {
  const std::size_t hidden_elements = in.steps * in.k;
  DeviceBuffer hidden(hidden_elements * 4);
  DeviceBuffer perturbed(hidden_elements * 4);
  DeviceBuffer weights(2 * hidden_elements * 4);
  DeviceBuffer targets(2 * in.steps * 4);
  DeviceBuffer logit_a(2 * in.steps * 4);
  DeviceBuffer logit_b(2 * in.steps * 4);
  DeviceBuffer argmax_a(in.steps);
  DeviceBuffer argmax_b(in.steps);
  if (!logit_a || !logit_b || !argmax_a || !argmax_b) return allocation_error();
  LLMREPRO_TRY(upload_floats(hidden, in.hidden.data(), hidden_elements));
  const std::vector<float>& source = drift ? in.drifted : in.hidden;
  LLMREPRO_TRY(upload_floats(perturbed, source.data(), hidden_elements));
  LLMREPRO_TRY(upload_floats(weights, in.weights.data(), 2 * hidden_elements));
  LLMREPRO_TRY(upload_floats(targets, in.targets.data(), 2 * in.steps));
  const int status = launch_flip_logits(
      hidden.floats(), perturbed.floats(), weights.floats(), targets.floats(), logit_a.floats(),
      logit_b.floats(), static_cast<unsigned char*>(argmax_a.get()),
      static_cast<unsigned char*>(argmax_b.get()), static_cast<int>(in.steps),
      static_cast<int>(in.k), precision_code(logits));
  LLMREPRO_TRY(finish("flip kernel", status));
  auto a = download_floats(logit_a.floats(), 2 * in.steps);
  auto b = download_floats(logit_b.floats(), 2 * in.steps);
  auto first = download(argmax_a.get(), in.steps);
  auto second = download(argmax_b.get(), in.steps);
  if (!a) return a.error();
  if (!b) return b.error();
  if (!first) return first.error();
  if (!second) return second.error();
  return FlipLogits{std::move(*a), std::move(*b),
                    std::vector<std::uint8_t>(first->begin(), first->end()),
                    std::vector<std::uint8_t>(second->begin(), second->end())};
}

} // namespace llmrepro::gpu::cuda
