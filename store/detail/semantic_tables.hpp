// The semantic agreement's tables (`semantic`, `semantic_prompts`): created on the first
// --embeddings measurement, absent from a database that never had one. Private to store.
#pragma once

#include <optional>

#include "core/result.hpp"
#include "core/semantic_agreement.hpp"
#include "store/detail/sqlite.hpp"

namespace llmrepro::store::detail {

// Creates the tables where absent and replaces what they hold with `agreement`. Inside the
// caller's transaction.
core::Result<void> write_semantic(const Connection& connection,
                                  const core::SemanticAgreement& agreement);

// The stored semantic agreement, summarized; empty when none was measured. ErrorCode::input when
// its rows are unreadable.
core::Result<std::optional<core::SemanticAgreement>> read_semantic(const Connection& connection);

} // namespace llmrepro::store::detail
