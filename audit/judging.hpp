// The judging values `audit` and `report` share (audit/request.hpp): one validation and the one
// way they enter a configuration, and whether an audit's plan can judge its gates.
#pragma once

#include <cstddef>
#include <string>

#include "audit/request.hpp"
#include "core/audit.hpp"
#include "core/result.hpp"

namespace llmrepro::audit {

// Validates every judging value (NaN, infinities and out-of-range values are usage errors naming
// the flag) and writes them into `config`: all of them, or with `given_only` only those given
// (--resume and `report` keep the stored value of the others).
core::Result<void> apply_judging(const Judging& judging, core::AuditConfig& config,
                                 bool given_only);

// Whether the gates of `config` can be judged by the audit it plans: --fail-on disagree needs
// two endpoints, a stability gate more than one completion per prompt. `endpoints` is how many
// endpoints the audit runs against; `hint` ends the disagree message (how to get a second).
core::Result<void> check_gates_fit(const core::AuditConfig& config, std::size_t endpoints,
                                   const std::string& hint);

// A finite number within [low, high], else a usage error naming `flag` and what it takes.
core::Result<void> check_finite_in(const char* flag, double value, double low, double high);
// A finite number greater than `low` (`what` describes the unit: "seconds"), else a usage error.
core::Result<void> check_finite_above(const char* flag, double value, double low,
                                      const char* what = "a number");
// A finite number of at least `low`, else a usage error naming `flag` and `what` it takes.
core::Result<void> check_finite_at_least(const char* flag, double value, double low,
                                         const char* what = "a number");

} // namespace llmrepro::audit
