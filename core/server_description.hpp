// What an HTTP endpoint says about the server behind it (llama.cpp's /props, TGI's /info, ...):
// the serving stack an audit measured, stored with it so that every report names it and
// `llmrepro diff` names any change in it before it compares numbers.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace llmrepro::core {

// One setting the server reported, in words: {"slots", "8"}, {"context per slot", "512"}.
struct ServerFact {
  std::string name;
  std::string value;
  friend bool operator==(const ServerFact&, const ServerFact&) = default;
};

// A server's description of itself. Every value came from the server: untrusted text, capped
// (k_server_text_max code points, control characters replaced) before it is stored; renderers
// escape it like any other endpoint text. Empty (`known()` false) when the endpoint is the
// embedded engine, its dialect has no such route, or the route did not answer.
struct ServerDescription {
  std::string kind;              // "llama.cpp", "SGLang", "vLLM", "TGI", "Ollama"
  std::string version;           // the build or release it reports ("b10470-34af94cd9")
  std::vector<ServerFact> facts; // the settings that shape its completions, a fixed order per kind
  std::string summary; // one line: "llama.cpp b10470-34af94cd9, 8 slots, 512 tokens per slot"

  bool known() const { return !kind.empty(); }
  friend bool operator==(const ServerDescription&, const ServerDescription&) = default;
};

// The most code points any value of a description keeps.
inline constexpr std::size_t k_server_text_max = 120;

// Server text made safe to store: the run's secrets (core::run_secrets) redacted, invalid UTF-8
// and control characters replaced, at most k_server_text_max code points ("…" appended when cut).
std::string server_text(std::string_view text);

// Each difference between A's and B's descriptions, in words, in this order: the server and
// its version ("llama.cpp b10470 -> b10500", or "llama.cpp b10470 -> TGI 3.3.6" when the kind
// changed), then each fact whose value differs or that one side lacks ("slots 8 -> 4",
// "model path (none) -> m.gguf"). An unknown side is "unknown" ("unknown -> vLLM 0.11.0").
// Empty when they are equal, and when neither is known.
std::vector<std::string> server_changes(const ServerDescription& a, const ServerDescription& b);

// "serving stack changed: llama.cpp b10470 -> b10500; slots 8 -> 4", or empty without changes.
std::string server_change_line(const std::vector<std::string>& changes);

} // namespace llmrepro::core
