#include <doctest/doctest.h>

#include "gpu/probe_json.hpp"

using namespace llmrepro;

namespace {

core::ProbeResult sample_result() {
  core::ProbeResult result;
  result.backend = "cuda";
  result.backend_reason = "auto: CUDA device visible: H200 \"NVL\"";
  result.dtype = "bf16";
  result.quick = true;
  result.device = {"NVIDIA H200", 132, "CUDA driver API 12.8", "13.0", "13.0.2"};
  core::ProbeExperiment experiment;
  experiment.id = "E1";
  experiment.title = "Matmul <sweep>";
  experiment.held = {{"K", core::ProbeValue{std::int64_t{4096}}},
                     {"eps", core::ProbeValue{1e-6}},
                     {"dtype", core::ProbeValue{std::string("bf16")}}};
  experiment.varied = {"M", "variant"};
  core::ProbeRow row;
  row.variant = "lt_default";
  row.params = {{"M", core::ProbeValue{std::int64_t{129}}}, {"gap", core::ProbeValue{2.0}}};
  row.elements = 4096;
  row.changed_frac = 0.000244140625;
  row.max_abs = 0.0625;
  row.max_ulp = 1.0;
  row.ulp_histogram = {4095, 1, 0, 0, 0};
  row.fp32_changed_frac = 0.9;
  row.measures = {{"split_k", 4.0}};
  experiment.rows.push_back(row);
  row.fp32_changed_frac.reset();
  experiment.rows.push_back(row);
  experiment.notes = {"note one"};
  result.experiments.push_back(experiment);
  core::ProbeExperiment skipped;
  skipped.id = "E7";
  skipped.title = "cost";
  skipped.status = core::ProbeStatus::skipped;
  result.experiments.push_back(skipped);
  result.recommendation = {true, 0.125, 0.05, "use --fragile-gap 0.2"};
  return result;
}

} // namespace

TEST_CASE("probe_result_to_json") {
  const std::string json = gpu::probe_result_to_json(sample_result());
  CHECK(json.find(R"("schema":"llmrepro.gpu-probe.v1")") != std::string::npos);
  CHECK(json.find(R"("backend":"cuda")") != std::string::npos);
  CHECK(json.find(R"("sm_count":132)") != std::string::npos);
  CHECK(json.find(R"("params":{"M":129,"gap":2.0})") != std::string::npos);
  CHECK(json.find(R"("fp32_changed_frac":null)") != std::string::npos);
  CHECK(json.find(R"(H200 \"NVL\")") != std::string::npos);
}

TEST_CASE("probe_result_from_json") {
  SUBCASE("round trip keeps every field") {
    const core::ProbeResult original = sample_result();
    auto read = gpu::probe_result_from_json(gpu::probe_result_to_json(original));
    REQUIRE_MESSAGE(read.has_value(), read.error().message);
    CHECK(read->backend_reason == original.backend_reason);
    CHECK(read->device.sm_count == 132);
    CHECK(read->device.cublas == "13.0.2");
    REQUIRE(read->experiments.size() == 2);
    const auto& experiment = read->experiments[0];
    CHECK(experiment.title == "Matmul <sweep>");
    REQUIRE(experiment.held.size() == 3);
    CHECK(std::get<std::int64_t>(experiment.held[0].value) == 4096);
    CHECK(std::get<double>(experiment.held[1].value) == 1e-6);
    CHECK(std::get<std::string>(experiment.held[2].value) == "bf16");
    REQUIRE(experiment.rows.size() == 2);
    CHECK(std::get<std::int64_t>(experiment.rows[0].params[0].value) == 129);
    CHECK(std::get<double>(experiment.rows[0].params[1].value) == 2.0);
    CHECK(experiment.rows[0].changed_frac == 0.000244140625);
    CHECK(experiment.rows[0].ulp_histogram[1] == 1);
    CHECK(experiment.rows[0].fp32_changed_frac.value() == 0.9);
    CHECK_FALSE(experiment.rows[1].fp32_changed_frac.has_value());
    CHECK(experiment.rows[0].measures[0].name == "split_k");
    CHECK(read->experiments[1].status == core::ProbeStatus::skipped);
    CHECK(read->recommendation.flip_gap == 0.125);
    CHECK(read->recommendation.text == "use --fragile-gap 0.2");
  }
  SUBCASE("a missing field is named") {
    std::string json = gpu::probe_result_to_json(sample_result());
    const auto at = json.find(R"("max_ulp":1.0,)");
    REQUIRE(at != std::string::npos);
    json.erase(at, std::string(R"("max_ulp":1.0,)").size());
    auto read = gpu::probe_result_from_json(json);
    REQUIRE_FALSE(read.has_value());
    CHECK(read.error().message.find("experiments[0].rows[0].max_ulp") != std::string::npos);
  }
  SUBCASE("a wrongly typed field is named") {
    std::string json = gpu::probe_result_to_json(sample_result());
    const auto at = json.find(R"("sm_count":132)");
    json.replace(at, std::string(R"("sm_count":132)").size(), R"("sm_count":"many")");
    auto read = gpu::probe_result_from_json(json);
    REQUIRE_FALSE(read.has_value());
    CHECK(read.error().message.find("device.sm_count") != std::string::npos);
  }
  SUBCASE("another schema is refused") {
    auto read = gpu::probe_result_from_json(R"({"schema":"other.v2"})");
    REQUIRE_FALSE(read.has_value());
    CHECK(read.error().message.find("other.v2") != std::string::npos);
  }
}
