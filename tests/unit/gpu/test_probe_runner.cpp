#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gpu/probe_json.hpp"
#include "gpu/probe_runner.hpp"
#include "tests/support/temp_dir.hpp"

using namespace llmrepro;

namespace {

using testing::TempDir;

// A stand-in for llmrepro-gpu-cuda: a shell script answering the helper protocol.
std::string fake_helper(const TempDir& dir, const std::string& body) {
  const auto file = dir.path() / "helper.sh";
  std::ofstream(file) << "#!/bin/sh\n" << body;
  ::chmod(file.c_str(), 0755);
  return file.string();
}

} // namespace

TEST_CASE("parse_backend") {
  CHECK(gpu::parse_backend("auto").value() == gpu::Backend::automatic);
  CHECK(gpu::parse_backend("cuda").value() == gpu::Backend::cuda);
  CHECK(gpu::parse_backend("cpu").value() == gpu::Backend::cpu);
  auto bad = gpu::parse_backend("rocm");
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().code == core::ErrorCode::usage);
}

TEST_CASE("run_probe") {
  gpu::ProbeOptions options;
  options.quick = true;
  SUBCASE("cuda without a helper is an environment error") {
    options.backend = gpu::Backend::cuda;
    auto result = gpu::run_probe(options);
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().code == core::ErrorCode::environment);
  }
  SUBCASE("auto falls back to the CPU when the helper sees no device") {
    TempDir dir("gpu-probe");
    options.cuda_helper = fake_helper(dir, "exit 77\n");
    auto result = gpu::run_probe(options);
    REQUIRE(result.has_value());
    CHECK(result->backend == "cpu");
    CHECK(result->backend_reason.find("no CUDA device") != std::string::npos);
    options.backend = gpu::Backend::cuda;
    auto forced = gpu::run_probe(options);
    REQUIRE_FALSE(forced.has_value());
    CHECK(forced.error().message.find("no CUDA device") != std::string::npos);
  }
  SUBCASE("auto reads the helper's report when a device is visible") {
    TempDir dir("gpu-probe");
    core::ProbeResult report;
    report.backend = "cuda";
    report.dtype = "fp16";
    report.device.name = "Test GPU";
    report.device.sm_count = 7;
    std::ofstream(dir.path() / "report.json") << gpu::probe_result_to_json(report);
    options.precision = numerics::Precision::fp16;
    options.cuda_helper =
        fake_helper(dir, "if [ \"$1\" = --check-device ]; then echo 'Test GPU'; exit 0; fi\n"
                         "[ \"$1 $2 $3\" = '--dtype fp16 --quick' ] || exit 9\n"
                         "cat '" +
                             (dir.path() / "report.json").string() + "'\n");
    auto result = gpu::run_probe(options);
    REQUIRE_MESSAGE(result.has_value(), result.error().message);
    CHECK(result->backend == "cuda");
    CHECK(result->device.sm_count == 7);
    CHECK(result->backend_reason == "auto: CUDA device visible: Test GPU");
  }
  SUBCASE("a helper that fails mid-run is an internal error") {
    TempDir dir("gpu-probe");
    options.cuda_helper =
        fake_helper(dir, "if [ \"$1\" = --check-device ]; then echo GPU; exit 0; fi\nexit 1\n");
    auto result = gpu::run_probe(options);
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().code == core::ErrorCode::internal);
  }
}
