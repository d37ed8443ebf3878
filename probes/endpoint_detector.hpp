// `--api auto`: finds out which API dialect an endpoint speaks, and which model it serves,
// from a few cheap GET requests. The decision is a pure function over the probe responses.
#pragma once

#include <string>
#include <vector>

#include "core/result.hpp"
#include "probes/dialect.hpp"

namespace llmrepro::probes {

// What one GET returned. `answered` is false when no HTTP response arrived at all.
struct ProbeAnswer {
  bool answered = false;
  int http_status = 0;
  std::string body;
  std::string error; // the transport error when !answered
};

// The detection GETs, one per path.
struct DetectionProbes {
  ProbeAnswer models;     // GET /v1/models (OpenAI-compatible servers)
  ProbeAnswer health;     // GET /health (llama.cpp, vLLM, SGLang, TGI, the reference engine)
  ProbeAnswer props;      // GET /props (llama.cpp only)
  ProbeAnswer tags;       // GET /api/tags (Ollama; also llama.cpp 2025-26 and SGLang)
  ProbeAnswer info;       // GET /info (TGI)
  ProbeAnswer model_info; // GET /get_model_info (SGLang)
  ProbeAnswer version;    // GET /api/version (Ollama's own; not its imitators)
};

// Decides the dialect from the strongest evidence first; the first rule that matches wins:
//   1. /v1/models `owned_by` names the server on every model: "llamacpp" -> llamacpp,
//      "sglang" -> sglang;
//   2. SGLang's /get_model_info has "model_path"; llama.cpp's /health and /props (a JSON
//      object) both answer; TGI's /info has "model_id" and "max_concurrent_requests" or
//      "router"; Ollama answers both its own /api/version ({"version": "..."}) and /api/tags
//      (a "models" array);
//   3. openai-chat: owned_by "vllm" or "llmrepro", or any other 2xx JSON /v1/models;
//   4. ollama: /api/tags alone, when nothing else answered.
// llama.cpp (May 2025 to April 2026) and SGLang also serve /api/tags, whose Ollama-compatible
// routes return no logprobs (SGLang) or do not exist for completions (llama.cpp): /api/tags
// without /api/version never outweighs another route of the same server.
// No probe answered: ErrorCode::endpoint "cannot reach <url>: <error>". Answers that match no
// rule: ErrorCode::endpoint naming what /v1/models said and suggesting --api. `explanation`,
// when given, receives one line "<dialect>: <the evidence that decided>", which also says
// when /api/tags answered but was not used.
core::Result<Dialect> decide_dialect(const std::string& base_url, const DetectionProbes& probes,
                                     std::string* explanation);

// Whether the probes show llama.cpp in router mode (started without -m): /props answers with
// "role": "router". Its native /completion then needs `model` in every request.
bool is_llamacpp_router(const DetectionProbes& probes);

// The first model id: /v1/models data[0].id, else /api/tags models[0].name. An error names
// what was missing when neither lists a model.
core::Result<std::string> pick_model(const ProbeAnswer& models, const ProbeAnswer& tags);

// Sends the detection GETs concurrently (each bounded by timeout_s) and decides the dialect.
// `llamacpp_router`, when given, is set to whether the endpoint is llama.cpp in router mode.
core::Result<Dialect> detect_dialect(const std::string& base_url,
                                     const std::vector<std::string>& headers,
                                     const std::string& api_key, bool insecure, double timeout_s,
                                     std::string* explanation, bool* llamacpp_router = nullptr);

// GETs /v1/models and /api/tags and returns the first model id, for when --model is not given.
core::Result<std::string> detect_model(const std::string& base_url,
                                       const std::vector<std::string>& headers,
                                       const std::string& api_key, bool insecure, double timeout_s);

} // namespace llmrepro::probes
