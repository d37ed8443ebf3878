// The up-front check of whether the model behind an endpoint returns logprobs at all. OpenAI's
// reasoning models (the o-series) answer chat completions without `logprobs` or reject the
// parameter with a 400 naming it; an audit of such a model can only compare texts, and the
// user should learn that before the plan runs rather than from its results.
#pragma once

#include <string>

#include "core/suite.hpp"
#include "probes/scheduler.hpp"

namespace llmrepro::probes {

struct LogprobSupport {
  bool returns_logprobs = true;
  // Whether the endpoint refused the request because it named `logprobs` (a 400 whose reason
  // names the parameter): the audit's requests must then leave logprobs out.
  bool rejects_logprobs = false;
  std::string model;  // the model the answer named, else the one requested
  std::string reason; // why returns_logprobs is false ("it answered without logprobs", ...)
};

// True where the check is made: an openai-chat target on OpenAI's own API (the host whose
// reasoning models return no logprobs). Self-hosted servers always return them when asked.
bool logprob_check_applies(const EndpointTarget& target);

// Sends `prompt` once to `target` as the audit would and reports whether the answer carried
// logprobs. Only a definite answer says they are missing: a 2xx completion without them, or a
// 400 whose reason names `logprobs`. A transport failure or any other error says nothing
// (returns_logprobs stays true) and is left to the audit, which retries and records it.
LogprobSupport check_logprob_support(const EndpointTarget& target, const SchedulerConfig& config,
                                     const core::Prompt& prompt);

} // namespace llmrepro::probes
