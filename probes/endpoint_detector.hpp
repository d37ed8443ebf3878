// `--api auto`: finds out which API dialect an endpoint speaks, and which model it serves,
// from a few cheap GET requests. The decision is a pure function over the probe responses.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/server_description.hpp"
#include "probes/dialect.hpp"
#include "probes/scheduler.hpp"

namespace llmrepro::probes {

// What one GET returned. `answered` is false when no HTTP response arrived at all.
struct ProbeAnswer {
  bool answered = false;
  int http_status = 0;
  std::string body;
  std::string error;        // the transport error when !answered
  std::string redirect_url; // where a 3xx pointed (never followed)
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
  // GETs on the two OpenAI POST routes, which say whether each route exists: a server with
  // the route answers 405 (FastAPI/Starlette: vLLM, SGLang) or 200/400/401 (OpenAI lists
  // stored chat completions there); a server without it answers 404.
  ProbeAnswer chat_route;      // GET /v1/chat/completions
  ProbeAnswer responses_route; // GET /v1/responses
  // GET /v1beta/models, the Gemini API's model list, joined like the Gemini dialect's own
  // paths ("<base>/models" where the base names a version, as .../v1beta does). The key goes
  // in x-goog-api-key: Google's API refuses an API key sent as a bearer token.
  ProbeAnswer gemini_models;
};

// Decides the dialect from the strongest evidence first; the first rule that matches wins:
//   1. /v1/models `owned_by` names the server on every model: "llamacpp" -> llamacpp,
//      "sglang" -> sglang;
//   2. SGLang's /get_model_info has "model_path"; llama.cpp's /health and /props (a JSON
//      object) both answer; TGI's /info has "model_id" and "max_concurrent_requests" or
//      "router"; Ollama answers both its own /api/version ({"version": "..."}) and /api/tags
//      (a "models" array);
//   3. gemini: /v1beta/models is a JSON object whose "models" is a non-empty array of objects,
//      each with a "name" starting "models/" and a "supportedGenerationMethods" array (the
//      Gemini API's models.list; Ollama's /api/tags names its models "qwen3:8b", OpenAI's
//      list is "data"); checked after every server that names itself;
//   4. openai-chat: owned_by "vllm" or "llmrepro", or any other 2xx JSON /v1/models; but
//      openai-responses where /v1/models names no server (neither "vllm" nor "llmrepro"),
//      GET /v1/chat/completions answered 404 and GET /v1/responses answered anything else
//      (an HTTP answer, not a transport failure): the Responses API is the only one served;
//   5. ollama: /api/tags alone, when nothing else answered;
//   6. openai-responses without a model list: when no rule above matched, GET
//      /v1/chat/completions answered 404 and GET /v1/responses 200, 400, 401, 403 or 405.
// Rule 6 is sound because two sibling paths of one host answering differently can only come
// from a route table that has one route and not the other: a catch-all server, a gateway
// refusing credentials or a server that is down answers both alike. Only statuses a live
// route gives a GET count; a 5xx, 429 or redirect says nothing about routes. It turns what
// would be an error into a decision and never outweighs another rule; --model is then needed,
// since no route lists the models.
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

// The Gemini model to audit: the first entry of /v1beta/models whose
// supportedGenerationMethods contains "generateContent", without its "models/" prefix
// ("models/gemini-2.0-flash" -> "gemini-2.0-flash"). Only the first page is read (50 models
// by default). An ErrorCode::endpoint error names the models listed (or why there is no list)
// and asks for --model when none generates content.
core::Result<std::string> pick_gemini_model(const ProbeAnswer& gemini_models);

// Sends the detection GETs (each bounded by timeout_s) and decides the dialect: the seven
// server routes at once, then the two OpenAI POST routes and the Gemini model list at once on
// the same connections. `api_key` goes as a bearer token, except to the Gemini list, which
// gets it in x-goog-api-key; every GET goes to `base_url` alone.
// `extras`, when given, receives what detection found beside the dialect.
struct DetectionExtras {
  bool llamacpp_router = false; // llama.cpp in router mode (is_llamacpp_router)
  // The body of every path detection GETs ("" where it did not answer 2xx), by path: what
  // describe_server reuses instead of fetching /props again.
  std::map<std::string, std::string> answers;
};
core::Result<Dialect> detect_dialect(const std::string& base_url,
                                     const std::vector<std::string>& headers,
                                     const std::string& api_key, bool insecure, double timeout_s,
                                     std::string* explanation, DetectionExtras* extras = nullptr);

// What the server behind `target` says about itself: GETs description_routes(dialect)
// (probes/server_description.hpp) at once from its base URL, each bounded by timeout_s, with its
// headers and key as detection sends them, and parses the answers. A route `detected` answered
// (detect_dialect's answers: llama.cpp's /props under --api auto) is read from them, not fetched
// again. Sets target.context_per_slot from the description (context_per_slot), which sizes the
// probes' side traffic and long prompts. Empty when no route applies or none answered in its
// server's shape: never an error.
core::ServerDescription describe_server(EndpointTarget& target, Dialect dialect, double timeout_s,
                                        const DetectionExtras* detected = nullptr);

// Under --api auto, the dialect a suite goes out in. A server found by its native completion
// route (llamacpp, sglang, tgi) serves /v1/chat/completions too (llama-server and SGLang since
// their first releases, TGI's Messages API since 1.4; a GET there answers 404 on cpp-httplib, so
// it is known from the server, not probed): a suite of chat prompts goes there (openai-chat),
// and the server applies the model's own chat template, as users' chat traffic does. Flattened
// onto /completion a chat prompt is another prompt (other tokens, other near-ties). A suite that
// mixes text and chat prompts keeps the native route (a text prompt sent as a chat message would
// be another prompt too), and every output names the flattened ones (core/prompt_form).
// `detected` otherwise.
Dialect dialect_for_suite(Dialect detected, int text_prompts, int chat_prompts);

// The model to audit when --model is not given. For `dialect` gemini: GETs /v1beta/models
// (key in x-goog-api-key) and returns pick_gemini_model's choice; for anthropic: GETs
// /v1/models with its key header and version and returns pick_model's; for the others: GETs
// /v1/models and /api/tags and returns pick_model's.
core::Result<std::string> detect_model(const std::string& base_url, Dialect dialect,
                                       const std::vector<std::string>& headers,
                                       const std::string& api_key, bool insecure, double timeout_s);

} // namespace llmrepro::probes
