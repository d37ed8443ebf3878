// The serving stack behind an HTTP endpoint, from the route its server describes itself on:
// llama.cpp GET /props, SGLang GET /get_server_info, vLLM GET /version, TGI GET /info, Ollama
// GET /api/version. Each parser is a pure function of a response body; any body that is not
// the server's shape gives an empty description, never an error (an audit never fails for
// want of one).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/server_description.hpp"
#include "probes/dialect.hpp"

namespace llmrepro::probes {

// llama.cpp (tools/server/server-context.cpp get_props): version `build_info`; facts "slots"
// (`total_slots`), "context per slot" (`default_generation_settings.n_ctx`, else a top-level
// `n_ctx` divided by `total_slots`), "model path" (`model_path`), and "role" where the server is
// a router. Needs `build_info` or `total_slots`.
core::ServerDescription describe_llamacpp_props(const std::string& body);

// The tokens one request may hold at the described server: its "context per slot" fact as a
// positive integer; empty where it has none (every server but llama.cpp, a router's 0).
std::optional<int> context_per_slot(const core::ServerDescription& description);

// SGLang (python/sglang/srt/entrypoints/http_server.py get_server_info: its ServerArgs, the
// scheduler's info and `version`): facts "model path", "tp size", "dp size", "context length",
// "max running requests", "attention backend", "radix cache" (off where
// `disable_radix_cache`), "deterministic inference" (`enable_deterministic_inference`), "random
// seed"; those the body lacks are left out. Needs `version` and `model_path`.
core::ServerDescription describe_sglang_server_info(const std::string& body);

// vLLM (vllm/entrypoints/openai/api_server.py show_version): {"version": "0.11.0"}.
core::ServerDescription describe_vllm_version(const std::string& body);

// TGI (router/src/lib.rs Info): version `version`; facts "sha", "model id", "max input
// tokens" (`max_input_tokens`, or `max_input_length` before TGI 2.1), "max total tokens". Needs
// `model_id` and `version`.
core::ServerDescription describe_tgi_info(const std::string& body);

// Ollama (server/routes.go, GET /api/version): {"version": "0.13.0"}.
core::ServerDescription describe_ollama_version(const std::string& body);

// The GET routes that describe a server speaking `dialect`, at most two: llamacpp /props,
// sglang /get_server_info, tgi /info, ollama /api/version; openai-chat and openai-completions
// /version (vLLM) and /props (llama.cpp serves those routes too); none for the hosted APIs
// (openai-responses, gemini, anthropic).
std::vector<std::string> description_routes(Dialect dialect);

// The description from the 2xx bodies of description_routes(dialect), in that order (an empty
// string for a route that did not answer 2xx): the first route whose body parses.
core::ServerDescription describe_from_bodies(Dialect dialect,
                                             const std::vector<std::string>& bodies);

} // namespace llmrepro::probes
