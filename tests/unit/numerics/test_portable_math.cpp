#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "numerics/float_format.hpp"
#include "numerics/portable_math.hpp"

using namespace llmrepro::numerics;

namespace {

// Distance in units of fp32 spacing at the exact (double) value.
double ulps(float value, double exact) {
  return std::fabs(static_cast<double>(value) - exact) /
         static_cast<double>(ulp_at(Precision::fp32, static_cast<float>(exact)));
}

} // namespace

TEST_CASE("portable_exp") {
  SUBCASE("within 2 ULP of exp over the range attention uses") {
    double worst = 0.0;
    for (int i = 0; i <= 200000; ++i) {
      const float x = -80.0f + 88.0f * static_cast<float>(i) / 200000.0f;
      worst = std::max(worst, ulps(portable_exp(x), std::exp(static_cast<double>(x))));
    }
    CHECK(worst <= 2.0);
  }
  SUBCASE("exact and special points") {
    CHECK(portable_exp(0.0f) == 1.0f);
    CHECK(portable_exp(-100.0f) == 0.0f);
    CHECK(std::isinf(portable_exp(100.0f)));
    CHECK(std::isnan(portable_exp(std::numeric_limits<float>::quiet_NaN())));
    CHECK(portable_exp(-std::numeric_limits<float>::infinity()) == 0.0f);
  }
}

TEST_CASE("portable_log") {
  SUBCASE("within 3 ULP of log from subnormals to 1e30 (cancellation near 1 costs one)") {
    double worst = 0.0;
    for (int i = 0; i <= 200000; ++i) {
      const float x = std::pow(10.0f, -40.0f + 70.0f * static_cast<float>(i) / 200000.0f);
      if (x == 0.0f || x == 1.0f) continue;
      worst = std::max(worst, ulps(portable_log(x), std::log(static_cast<double>(x))));
    }
    CHECK(worst <= 3.0);
  }
  SUBCASE("special points") {
    CHECK(portable_log(1.0f) == 0.0f);
    CHECK(std::isinf(portable_log(0.0f)));
    CHECK(portable_log(0.0f) < 0.0f);
    CHECK(std::isnan(portable_log(-1.0f)));
    CHECK(std::isinf(portable_log(std::numeric_limits<float>::infinity())));
  }
}
