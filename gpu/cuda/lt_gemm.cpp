#include "gpu/cuda/lt_gemm.hpp"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstring>

namespace llmrepro::gpu::cuda {

struct LtGemm::State {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t operation = nullptr;
  cublasLtMatrixLayout_t w_layout = nullptr;
  cublasLtMatrixLayout_t x_layout = nullptr;
  cublasLtMatrixLayout_t d_layout = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  cublasLtMatmulAlgo_t algo{};
  LtAlgoInfo info;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

namespace {

core::Error lt_error(const char* what, cublasStatus_t status) {
  return core::make_error(core::ErrorCode::environment,
                          std::string("cuBLASLt ") + what + " failed (status " +
                              std::to_string(static_cast<int>(status)) + ")");
}

cudaDataType_t data_type(numerics::Precision precision) {
  switch (precision) {
  case numerics::Precision::bf16: return CUDA_R_16BF;
  case numerics::Precision::fp16: return CUDA_R_16F;
  case numerics::Precision::fp32: return CUDA_R_32F;
  }
  return CUDA_R_32F;
}

} // namespace

LtGemm::LtGemm(std::unique_ptr<State> state) : m_state(std::move(state)) {}

LtGemm::~LtGemm() {
  if (m_state->preference) cublasLtMatmulPreferenceDestroy(m_state->preference);
  if (m_state->d_layout) cublasLtMatrixLayoutDestroy(m_state->d_layout);
  if (m_state->x_layout) cublasLtMatrixLayoutDestroy(m_state->x_layout);
  if (m_state->w_layout) cublasLtMatrixLayoutDestroy(m_state->w_layout);
  if (m_state->operation) cublasLtMatmulDescDestroy(m_state->operation);
  if (m_state->handle) cublasLtDestroy(m_state->handle);
}

const LtAlgoInfo& LtGemm::algo() const { return m_state->info; }

namespace {

// Reads the configuration of `algo` into `info` (opaque included).
void describe(const cublasLtMatmulAlgo_t& algo, LtAlgoInfo& info) {
  std::size_t written = 0;
  std::int32_t algo_id = 0;
  std::uint32_t tile = 0;
  std::int32_t split = 1;
  std::uint32_t scheme = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &algo_id, sizeof algo_id,
                                       &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile,
                                       &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split, sizeof split,
                                       &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme,
                                       sizeof scheme, &written);
  info.algo_id = algo_id;
  info.tile_id = tile;
  info.split_k = split;
  info.reduction_scheme = scheme;
  static_assert(sizeof(cublasLtMatmulAlgo_t) == sizeof(info.opaque));
  std::memcpy(info.opaque.data(), &algo, sizeof algo);
}

const char* policy_name(LtPolicy policy) {
  switch (policy) {
  case LtPolicy::heuristic: return "heuristic";
  case LtPolicy::no_split_k: return "split-K forbidden";
  case LtPolicy::forced_split_k: return "forced split-K";
  case LtPolicy::pinned: return "pinned algorithm";
  }
  return "heuristic";
}

constexpr int k_heuristic_results = 16;

} // namespace

const char* lt_scheme_name(unsigned scheme) {
  switch (scheme) {
  case k_lt_scheme_inplace: return "inplace";
  case k_lt_scheme_compute_type: return "compute_type";
  case k_lt_scheme_output_type: return "output_type";
  default: return "none";
  }
}

core::Result<std::unique_ptr<LtGemm>> LtGemm::create(numerics::Precision precision, int m, int n,
                                                     int k, const LtRequest& request,
                                                     void* workspace, std::size_t workspace_bytes) {
  auto state = std::make_unique<State>();
  state->workspace = workspace;
  state->workspace_bytes = workspace_bytes;
  // Owned by the LtGemm from here on, so every early return releases what was created.
  std::unique_ptr<LtGemm> gemm(new LtGemm(std::move(state)));
  State& s = *gemm->m_state;
  cublasStatus_t status = cublasLtCreate(&s.handle);
  if (status != CUBLAS_STATUS_SUCCESS) return lt_error("create", status);
  // Column-major view of the row-major problem: D^T (n x m) = W (n x k, stored k-major) * X^T.
  status = cublasLtMatmulDescCreate(&s.operation, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  if (status != CUBLAS_STATUS_SUCCESS) return lt_error("matmul descriptor", status);
  const cublasOperation_t transpose = CUBLAS_OP_T;
  const cublasOperation_t keep = CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(s.operation, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                 sizeof transpose);
  cublasLtMatmulDescSetAttribute(s.operation, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof keep);
  const cudaDataType_t type = data_type(precision);
  status = cublasLtMatrixLayoutCreate(&s.w_layout, type, static_cast<std::uint64_t>(k),
                                      static_cast<std::uint64_t>(n), k);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatrixLayoutCreate(&s.x_layout, type, static_cast<std::uint64_t>(k),
                                        static_cast<std::uint64_t>(m), k);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatrixLayoutCreate(&s.d_layout, type, static_cast<std::uint64_t>(n),
                                        static_cast<std::uint64_t>(m), n);
  if (status != CUBLAS_STATUS_SUCCESS) return lt_error("layout", status);

  const auto check = [&](const cublasLtMatmulAlgo_t& algo, cublasLtMatmulHeuristicResult_t& out) {
    return cublasLtMatmulAlgoCheck(s.handle, s.operation, s.w_layout, s.x_layout, s.d_layout,
                                   s.d_layout, &algo, &out) == CUBLAS_STATUS_SUCCESS &&
           out.workspaceSize <= workspace_bytes;
  };
  if (request.policy == LtPolicy::pinned) {
    if (request.pinned == nullptr)
      return core::make_error(core::ErrorCode::internal, "pinned policy without an algorithm");
    std::memcpy(&s.algo, request.pinned->opaque.data(), sizeof s.algo);
    cublasLtMatmulHeuristicResult_t checked{};
    if (!check(s.algo, checked))
      return core::make_error(core::ErrorCode::environment,
                              "cuBLASLt rejects the pinned algorithm for this shape");
    s.info.waves = checked.wavesCount;
    s.info.workspace_bytes = checked.workspaceSize;
    describe(s.algo, s.info);
    return gemm;
  }

  status = cublasLtMatmulPreferenceCreate(&s.preference);
  if (status != CUBLAS_STATUS_SUCCESS) return lt_error("preference", status);
  const std::uint64_t bytes = workspace_bytes;
  cublasLtMatmulPreferenceSetAttribute(s.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &bytes, sizeof bytes);
  if (request.policy == LtPolicy::no_split_k) {
    const std::uint32_t mask = CUBLASLT_REDUCTION_SCHEME_NONE;
    cublasLtMatmulPreferenceSetAttribute(s.preference, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                         &mask, sizeof mask);
  }
  cublasLtMatmulHeuristicResult_t results[k_heuristic_results]{};
  int found = 0;
  status = cublasLtMatmulAlgoGetHeuristic(
      s.handle, s.operation, s.w_layout, s.x_layout, s.d_layout, s.d_layout, s.preference,
      request.policy == LtPolicy::heuristic ? 1 : k_heuristic_results, results, &found);
  if (status != CUBLAS_STATUS_SUCCESS) return lt_error("heuristic", status);
  for (int i = 0; i < found; ++i) {
    cublasLtMatmulAlgo_t algo = results[i].algo;
    LtAlgoInfo info;
    describe(algo, info);
    if (request.policy == LtPolicy::no_split_k && info.split_k > 1) continue;
    cublasLtMatmulHeuristicResult_t checked = results[i];
    if (request.policy == LtPolicy::forced_split_k) {
      std::int32_t splits_supported = 0;
      std::uint32_t schemes = 0;
      std::size_t written = 0;
      cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &splits_supported,
                                        sizeof splits_supported, &written);
      cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &schemes,
                                        sizeof schemes, &written);
      if (splits_supported == 0 || (schemes & request.scheme) == 0) continue;
      const std::int32_t split = request.split_k;
      const std::uint32_t scheme = request.scheme;
      cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split,
                                           sizeof split);
      cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme,
                                           sizeof scheme);
      if (!check(algo, checked)) continue;
      describe(algo, info);
    }
    s.algo = algo;
    s.info = info;
    s.info.waves = checked.wavesCount;
    s.info.workspace_bytes = checked.workspaceSize;
    return gemm;
  }
  return core::make_error(core::ErrorCode::environment,
                          std::string("cuBLASLt has no algorithm for ") +
                              policy_name(request.policy) + " at this shape");
}

core::Result<void> LtGemm::run(const void* x, const void* w, void* d) {
  State& s = *m_state;
  const float alpha = 1.0f;
  const float beta = 0.0f;
  const cublasStatus_t status =
      cublasLtMatmul(s.handle, s.operation, &alpha, w, s.w_layout, x, s.x_layout, &beta, d,
                     s.d_layout, d, s.d_layout, &s.algo, s.workspace, s.workspace_bytes, nullptr);
  if (status != CUBLAS_STATUS_SUCCESS) return lt_error("matmul", status);
  return {};
}

std::string lt_version() {
  const std::size_t version = cublasLtGetVersion();
  return std::to_string(version / 10000) + "." + std::to_string((version / 100) % 100) + "." +
         std::to_string(version % 100);
}

} // namespace llmrepro::gpu::cuda
