#include <doctest/doctest.h>

#include "report/detail/flip_summary.hpp"

using namespace llmrepro;

TEST_CASE("predictor_comparison_line: zero noise beside flips is no promise that nothing flips") {
  core::FlipCalibration calibration;
  calibration.recommended_tau = 0.0;
  calibration.prompts = 3;
  calibration.unstable = 0;
  CHECK(report::predictor_comparison_line(calibration, 0.05)
            .find("noise is zero: no flip predicted") != std::string::npos);
  calibration.unstable = 2;
  const std::string line = report::predictor_comparison_line(calibration, 0.05);
  CHECK(line.find("noise is zero, yet 2 prompts flipped: something other than noise flips them") !=
        std::string::npos);
  CHECK(line.find("nothing can flip") == std::string::npos);
  calibration.recommended_tau = 0.25;
  CHECK(report::predictor_comparison_line(calibration, 0.05).find("noise implies τ 0.25") !=
        std::string::npos);
}
