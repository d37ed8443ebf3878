// Small pieces of wording every human-readable report shares (terminal, Markdown, HTML), so
// that the same figure reads the same everywhere.
#pragma once

#include <string>

#include "core/analysis.hpp"
#include "core/verdict.hpp"

namespace llmrepro::report {

// A share as a percentage with one decimal: 0.125 is "12.5%".
std::string percent_text(double share);

// The distinct completions of every prompt, summed: the "N distinct completions" of a headline.
int distinct_completions(const core::AuditAnalysis& analysis);

// Where a gate looked: "endpoint 0 · sweep · c=8", the parts it was scoped by, or "whole audit".
std::string gate_scope_text(const core::GateScope& scope);

} // namespace llmrepro::report
