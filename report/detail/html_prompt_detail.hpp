// The per-prompt section of the HTML audit report: the divergence tree of a prompt's distinct
// completions, the reference beside each variant with the first divergent token highlighted,
// and the gap along the reference's tokens. Part of render_html (html_report.hpp).
#pragma once

#include <string>
#include <vector>

#include "core/analysis.hpp"

namespace llmrepro::report {

// The tokens a completion is shown as: its token strings, or its text's code points where the
// endpoint returned no tokens.
std::vector<std::string> display_tokens(const core::DistinctCompletion& completion);

// The divergence tree as a nested <ul class="tree">: the prefix all completions share, then at
// each branch point one child per distinct next token with its run count (992 vs 8). By
// characters (code points) where the prompt was compared by text, or where two distinct
// completions have the same tokens.
std::string render_divergence_tree(const core::PromptAnalysis& prompt);

// The body of a prompt's <details> element: the facts (status, unit compared, divergence kind,
// fragility yes / no / unknown and why, non-greedy tokens, token/text mismatches, fewest
// candidates, non-finite log probabilities), a table of the distinct completions (runs, where
// each diverges, finish reasons, models and fingerprints with counts), the tree, the reference
// beside each variant, and the gap line. `fragile_gap` is τ (nats), drawn on the gap line.
std::string render_prompt_detail(const core::PromptAnalysis& prompt, double fragile_gap);

} // namespace llmrepro::report
