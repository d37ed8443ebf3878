// The canonical stand-in for an impossible token (log probability -inf) in a Completion.
// Endpoints spell it differently: vLLM and the OpenAI spec send -9999.0, llama.cpp sends
// float lowest (about -3.4e38) because its JSON library turns -inf into null, and
// probability shapes send p == 0. One finite value keeps gaps, SQLite and JSON reports exact.
#pragma once

namespace llmrepro::core {

// OpenAI's own convention ("-9999.0 signifies that the token is very unlikely").
inline constexpr double k_logprob_floor = -9999.0;

// Maps every log probability at or below the floor (including -inf) to the floor.
inline double clamp_logprob(double logprob) {
  return logprob < k_logprob_floor ? k_logprob_floor : logprob;
}

} // namespace llmrepro::core
