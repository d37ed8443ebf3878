// The capability preflight: a few requests per endpoint before the plan runs, each counted, that
// find what the endpoint does with the parameters the audit sends. Hosted models of 2026 refuse
// temperature 0 (Anthropic's newest: 400 "`temperature` is deprecated for this model"; OpenAI's
// GPT-5 and o-series: only the default), return no logprobs, or accept a seed and ignore it
// (LM Studio); routers drop parameters silently. Without the preflight every request to such a
// model fails, or the audit measures something other than what it says.
// docs/design.md "Capability preflight".
#pragma once

#include <string>
#include <string_view>

#include "core/capabilities.hpp"
#include "core/completion.hpp"
#include "core/suite.hpp"
#include "probes/scheduler.hpp"

namespace llmrepro::probes {

// The prompt the preflight sends (never a suite prompt, so that no prefix cache holds a suite
// prompt before its first audited request): a chat message where the suite's first prompt is a
// chat prompt, else the same words as text. Its answer is at most k_preflight_max_tokens long.
core::Prompt preflight_prompt(bool chat);
inline constexpr int k_preflight_max_tokens = 32;
// The most requests run_preflight sends: two, one more per refused parameter (three at most),
// none of them tried again.
inline constexpr int k_preflight_max_requests = 5;
// The longest one preflight request may take (seconds), or --timeout where that is shorter.
inline constexpr double k_preflight_timeout_s = 60;

// The parameter a refusal names, where `http_status` is 400 or 422 and the body's reason (or its
// `param` field) names one of the audit's parameters in refusing words ("not supported",
// "deprecated", "Only the default", "Extra inputs are not permitted", "Unrecognized request
// argument"): "temperature", "logprobs" (also top_logprobs, responseLogprobs) or "seed".
// Empty otherwise: "top_logprobs must be at most 20" asks for fewer, it refuses nothing.
std::string refused_parameter(int http_status, std::string_view body);

// Temperature 0's fate from two identical greedy requests' answers: ignored where an answer
// chose a token more than k_sampling_evidence_nats below its position's top candidate, or the two
// parted where the top candidate led by more than that; accepted where they agree or part at a
// near tie; unconfirmed where they differ and neither carried logprobs.
core::CapabilityCheck judge_greedy(const core::Completion& first, const core::Completion& second);
inline constexpr double k_sampling_evidence_nats = 0.1;

// A seed's fate from two identical sampled requests that both carried it: honoured where they
// answered alike, not honoured where they differ; untested where both answers are empty.
core::CapabilityCheck judge_seed(const core::Completion& first, const core::Completion& second,
                                 std::uint64_t seed);

// Whether `dialect` sends a seed at all (SGLang's native route, the Responses API and
// Anthropic's Messages API take none).
bool dialect_sends_seed(Dialect dialect);

// What the audit's requests to `target` leave out after the preflight found `capabilities`
// (or a --resume read them back): the temperature where it was refused or the provider's
// default was asked for, logprobs and the seed where refused.
void apply_capabilities(EndpointTarget& target, const core::EndpointCapabilities& capabilities);

// Sends the preflight to `target`: the audit's request for preflight_prompt(chat), resent without
// each parameter a refusal names (refused_parameter; at most three), then once more identically
// to judge the temperature (judge_greedy) or, at the provider's default, the seed (judge_seed).
// Two requests where nothing is refused, k_preflight_max_requests at most. A request that fails
// otherwise (a transport failure, another status, a body that does not parse; none is tried
// again, so that the budgets can reserve the most it sends) ends the preflight with `failure`
// set: what it did not learn stays unchecked, and the audit sends what it was asked to.
core::EndpointCapabilities run_preflight(const EndpointTarget& target,
                                         const SchedulerConfig& config, bool chat,
                                         core::TemperatureMode requested);

} // namespace llmrepro::probes
