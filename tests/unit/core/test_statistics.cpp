#include <doctest/doctest.h>

#include <vector>

#include "core/statistics.hpp"

using namespace llmrepro::core;

TEST_CASE("normal_quantile") {
  CHECK(normal_quantile(0.975) == doctest::Approx(1.959963984540054).epsilon(1e-13));
  CHECK(normal_quantile(0.025) == doctest::Approx(-1.959963984540054).epsilon(1e-13));
  CHECK(normal_quantile(0.5) == doctest::Approx(0.0).epsilon(1e-15));
  CHECK(normal_quantile(0.001) == doctest::Approx(-3.090232306167813).epsilon(1e-12));
}

TEST_CASE("wilson_interval") {
  SUBCASE("published values at 95%") {
    const Interval none = wilson_interval(0, 10);
    CHECK(none.low == 0.0);
    CHECK(none.high == doctest::Approx(0.2775327998628892).epsilon(1e-12));
    const Interval half = wilson_interval(5, 10);
    CHECK(half.low == doctest::Approx(0.236593090512564).epsilon(1e-12));
    CHECK(half.high == doctest::Approx(0.7634069094874361).epsilon(1e-12));
    const Interval most = wilson_interval(992, 1000);
    CHECK(most.low == doctest::Approx(0.9842936654690199).epsilon(1e-12));
    CHECK(most.high == doctest::Approx(0.995940804181194).epsilon(1e-12));
  }
  SUBCASE("all successes reach exactly 1; no trials know nothing") {
    CHECK(wilson_interval(10, 10).high == 1.0);
    CHECK(wilson_interval(0, 0).low == 0.0);
    CHECK(wilson_interval(0, 0).high == 1.0);
  }
}

TEST_CASE("mcnemar_exact_p") {
  CHECK(mcnemar_exact_p(0, 6) == doctest::Approx(2.0 / 64).epsilon(1e-12));
  CHECK(mcnemar_exact_p(9, 1) == doctest::Approx(22.0 / 1024).epsilon(1e-12));
  CHECK(mcnemar_exact_p(3, 5) == doctest::Approx(186.0 / 256).epsilon(1e-12));
  CHECK(mcnemar_exact_p(5, 5) == 1.0);
  CHECK(mcnemar_exact_p(0, 0) == 1.0);
  SUBCASE("symmetric in its arguments") { CHECK(mcnemar_exact_p(2, 7) == mcnemar_exact_p(7, 2)); }
}

TEST_CASE("sign_test_p") {
  CHECK(sign_test_p({1.0, 2.0, 1.0, 3.0, 1.0, 0.0, 0.0}) ==
        doctest::Approx(2.0 / 32).epsilon(1e-12));
  CHECK(sign_test_p({0.0, 0.0}) == 1.0);
  CHECK(sign_test_p({1.0, -1.0}) == 1.0);
}

TEST_CASE("fisher_exact_p") {
  CHECK(fisher_exact_p(3, 4, 1, 4) == doctest::Approx(34.0 / 70).epsilon(1e-12));
  CHECK(fisher_exact_p(8, 8, 0, 8) == doctest::Approx(2.0 / 12870).epsilon(1e-10));
  CHECK(fisher_exact_p(1000, 1000, 992, 1000) ==
        doctest::Approx(0.007703480851083897).epsilon(1e-9));
  CHECK(fisher_exact_p(5, 5, 5, 5) == 1.0);
  CHECK(fisher_exact_p(1, 0, 1, 3) == 1.0);
}

TEST_CASE("holm_adjust") {
  const std::vector<double> adjusted = holm_adjust({0.01, 0.04, 0.03});
  REQUIRE(adjusted.size() == 3);
  CHECK(adjusted[0] == doctest::Approx(0.03));
  CHECK(adjusted[1] == doctest::Approx(0.06));
  CHECK(adjusted[2] == doctest::Approx(0.06));
  CHECK(holm_adjust({0.5, 0.9})[1] == 1.0);
  CHECK(holm_adjust({}).empty());
}

TEST_CASE("paired_bootstrap_mean") {
  SUBCASE("no change: mean 0, interval [0, 0], p 1") {
    const BootstrapResult r = paired_bootstrap_mean({0.0, 0.0, 0.0, 0.0}, 2000, 1);
    CHECK(r.mean == 0.0);
    CHECK(r.interval.low == 0.0);
    CHECK(r.interval.high == 0.0);
    CHECK(r.p_value == 1.0);
    CHECK(r.resamples == 2000);
  }
  SUBCASE("a constant shift: every resample agrees, p is the smallest the resamples allow") {
    const BootstrapResult r = paired_bootstrap_mean({1.0, 1.0, 1.0}, 999, 7);
    CHECK(r.mean == 1.0);
    CHECK(r.interval.low == 1.0);
    CHECK(r.interval.high == 1.0);
    CHECK(r.p_value == doctest::Approx(2.0 / 1000));
  }
  SUBCASE("the seed names the result") {
    const std::vector<double> d{-1.0, 0.0, 2.0, 1.0, 0.0, 3.0, -2.0, 1.0};
    const BootstrapResult a = paired_bootstrap_mean(d, 500, 42);
    const BootstrapResult b = paired_bootstrap_mean(d, 500, 42);
    const BootstrapResult c = paired_bootstrap_mean(d, 500, 43);
    CHECK(a.interval.low == b.interval.low);
    CHECK(a.interval.high == b.interval.high);
    CHECK(a.p_value == b.p_value);
    CHECK(a.mean == doctest::Approx(0.5));
    CHECK((a.interval.low != c.interval.low || a.interval.high != c.interval.high ||
           a.p_value != c.p_value));
    CHECK(a.interval.low < 0.5);
    CHECK(a.interval.high > 0.5);
    CHECK(a.interval.low >= -2.0);
    CHECK(a.interval.high <= 3.0);
  }
  SUBCASE("no pairs") {
    const BootstrapResult r = paired_bootstrap_mean({}, 100, 0);
    CHECK(r.mean == 0.0);
    CHECK(r.p_value == 1.0);
  }
}
