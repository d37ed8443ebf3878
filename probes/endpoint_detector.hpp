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
  ProbeAnswer tags;       // GET /api/tags (Ollama)
  ProbeAnswer info;       // GET /info (TGI)
  ProbeAnswer model_info; // GET /get_model_info (SGLang)
};

// Decides the dialect, first match wins:
//   Ollama    /api/tags is 2xx JSON with a "models" array;
//   TGI       /info is 2xx JSON with "model_id" and "max_concurrent_requests" or "router";
//   SGLang    /get_model_info is 2xx JSON with "model_path";
//   llama.cpp /health and /props are both 2xx, or /v1/models lists owned_by "llamacpp";
//   openai-chat when /v1/models is 2xx.
// No probe answered: ErrorCode::endpoint "cannot reach <url>: <error>". Answers that match no
// rule: ErrorCode::endpoint naming what /v1/models said and suggesting --api. `explanation`,
// when given, receives one line saying which evidence decided.
core::Result<Dialect> decide_dialect(const std::string& base_url, const DetectionProbes& probes,
                                     std::string* explanation);

// The first model id: /v1/models data[0].id, else /api/tags models[0].name. An error names
// what was missing when neither lists a model.
core::Result<std::string> pick_model(const ProbeAnswer& models, const ProbeAnswer& tags);

// Sends the detection GETs concurrently (each bounded by timeout_s) and decides the dialect.
core::Result<Dialect> detect_dialect(const std::string& base_url,
                                     const std::vector<std::string>& headers,
                                     const std::string& api_key, bool insecure, double timeout_s,
                                     std::string* explanation);

// GETs /v1/models and /api/tags and returns the first model id, for when --model is not given.
core::Result<std::string> detect_model(const std::string& base_url,
                                       const std::vector<std::string>& headers,
                                       const std::string& api_key, bool insecure, double timeout_s);

} // namespace llmrepro::probes
