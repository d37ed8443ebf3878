// The decisions of an adaptive audit (--adaptive), kept as one JSON document under the `meta`
// key `adaptive`: absent from every other audit. Private to report/store.
#pragma once

#include <optional>

#include "core/adaptive_outcome.hpp"
#include "core/result.hpp"
#include "report/store/detail/sqlite.hpp"

namespace llmrepro::store::detail {

// Replaces the stored decisions with `outcome`.
core::Result<void> write_adaptive(const Connection& connection,
                                  const core::AdaptiveOutcome& outcome);

// The stored decisions; empty when the audit is not adaptive. ErrorCode::input when the document
// is unreadable.
core::Result<std::optional<core::AdaptiveOutcome>> read_adaptive(const Connection& connection);

} // namespace llmrepro::store::detail
