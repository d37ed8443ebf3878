#include "gpu/cuda/lt_gemm.hpp"

#include <cublasLt.h>
#include <cuda_runtime.h>

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

cudaDataType_t data_type(core::Precision precision) {
  switch (precision) {
  case core::Precision::bf16: return CUDA_R_16BF;
  case core::Precision::fp16: return CUDA_R_16F;
  case core::Precision::fp32: return CUDA_R_32F;
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

core::Result<std::unique_ptr<LtGemm>> LtGemm::create(core::Precision precision, int m, int n,
                                                     int k, bool forbid_split_k, void* workspace,
                                                     std::size_t workspace_bytes) {
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
  status = cublasLtMatmulPreferenceCreate(&s.preference);
  if (status != CUBLAS_STATUS_SUCCESS) return lt_error("preference", status);
  const std::uint64_t bytes = workspace_bytes;
  cublasLtMatmulPreferenceSetAttribute(s.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &bytes, sizeof bytes);
  if (forbid_split_k) {
    const std::uint32_t mask = CUBLASLT_REDUCTION_SCHEME_NONE;
    cublasLtMatmulPreferenceSetAttribute(s.preference, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                         &mask, sizeof mask);
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  status = cublasLtMatmulAlgoGetHeuristic(s.handle, s.operation, s.w_layout, s.x_layout,
                                          s.d_layout, s.d_layout, s.preference, 1, &result, &found);
  if (status != CUBLAS_STATUS_SUCCESS) return lt_error("heuristic", status);
  if (found == 0)
    return core::make_error(core::ErrorCode::environment, "cuBLASLt heuristic found no algorithm");
  s.algo = result.algo;
  s.info.waves = result.wavesCount;
  std::size_t written = 0;
  std::int32_t algo_id = 0;
  std::uint32_t tile = 0;
  std::int32_t split = 1;
  std::uint32_t scheme = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&s.algo, CUBLASLT_ALGO_CONFIG_ID, &algo_id, sizeof algo_id,
                                       &written);
  cublasLtMatmulAlgoConfigGetAttribute(&s.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile,
                                       &written);
  cublasLtMatmulAlgoConfigGetAttribute(&s.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split,
                                       sizeof split, &written);
  cublasLtMatmulAlgoConfigGetAttribute(&s.algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme,
                                       sizeof scheme, &written);
  s.info.algo_id = algo_id;
  s.info.tile_id = tile;
  s.info.split_k = split;
  s.info.reduction_scheme = scheme;
  return gemm;
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
