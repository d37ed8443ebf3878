#include "probes/endpoint_detector.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

#include "probes/endpoint_url.hpp"
#include "probes/http_transport.hpp"
#include "probes/server_description.hpp"

namespace llmrepro::probes {
namespace {

using nlohmann::json;

bool ok(const ProbeAnswer& answer) {
  return answer.answered && answer.http_status >= 200 && answer.http_status < 300;
}

// The body as a JSON object when the probe succeeded with one; detection never trusts a 2xx
// alone, since catch-all web servers answer 200 with HTML to any path.
std::optional<json> object_of(const ProbeAnswer& answer) {
  if (!ok(answer)) return std::nullopt;
  try {
    json parsed = json::parse(answer.body);
    if (parsed.is_object()) return parsed;
  } catch (const json::exception&) {
  }
  return std::nullopt;
}

// The server's name for itself in /v1/models `owned_by` ("llamacpp", "sglang", "vllm",
// "llmrepro"), when every listed model says the same; empty otherwise. OpenAI itself answers
// "openai" or "system" and Ollama "library": those name an owner, not a server, and are
// returned like any other value for the caller to ignore.
std::string models_owner(const json& models) {
  const auto data = models.find("data");
  if (data == models.end() || !data->is_array() || data->empty()) return "";
  std::string owner;
  for (const json& model : *data) {
    if (!model.is_object()) return "";
    const auto field = model.find("owned_by");
    if (field == model.end() || !field->is_string()) return "";
    if (!owner.empty() && owner != field->get<std::string>()) return "";
    owner = field->get<std::string>();
  }
  return owner;
}

bool lists_ollama_models(const std::optional<json>& tags) {
  if (!tags) return false;
  const auto models = tags->find("models");
  return models != tags->end() && models->is_array();
}

constexpr std::string_view k_gemini_list = "/v1beta/models";
constexpr std::string_view k_models_prefix = "models/";

// The entries of the Gemini API's models.list answer: a non-empty "models" array whose every
// entry is an object with a "name" starting "models/" and a "supportedGenerationMethods"
// array. Ollama's /api/tags also has "models", named "qwen3:8b" and without the methods, so it
// cannot pass for it. Empty when the answer has another shape.
const json* gemini_model_list(const std::optional<json>& list) {
  if (!list) return nullptr;
  const auto models = list->find("models");
  if (models == list->end() || !models->is_array() || models->empty()) return nullptr;
  for (const json& model : *models) {
    if (!model.is_object()) return nullptr;
    const auto name = model.find("name");
    if (name == model.end() || !name->is_string() ||
        name->get<std::string>().rfind(k_models_prefix, 0) != 0)
      return nullptr;
    const auto methods = model.find("supportedGenerationMethods");
    if (methods == model.end() || !methods->is_array()) return nullptr;
  }
  return &*models;
}

// Ollama's own GET /api/version answers {"version": "0.13.0"}; the Ollama-compatible
// routes of llama.cpp and SGLang serve /api/tags but not this.
bool ollama_version(const std::optional<json>& version) {
  if (!version) return false;
  const auto field = version->find("version");
  return field != version->end() && field->is_string();
}

// llama.cpp started without -m answers GET /props with "role": "router" (tools/server,
// server-models.cpp); its requests are proxied to a child chosen by the request's `model`.
bool props_say_router(const std::optional<json>& props) {
  if (!props) return false;
  const auto role = props->find("role");
  return role != props->end() && role->is_string() && role->get<std::string>() == "router";
}

bool answered_404(const ProbeAnswer& answer) {
  return answer.answered && answer.http_status == 404;
}

// The route evidence of a Responses-only server: no chat route, and a /v1/responses route
// that answered. `strict` (no model list to back it) accepts only the statuses a live route
// gives a GET: listed (200), refused as a request (400), refused the caller (401, 403) or the
// method (405).
bool responses_only(const DetectionProbes& probes, bool strict) {
  if (!answered_404(probes.chat_route) || !probes.responses_route.answered ||
      probes.responses_route.http_status == 404)
    return false;
  if (!strict) return true;
  switch (probes.responses_route.http_status) {
  case 200:
  case 400:
  case 401:
  case 403:
  case 405: return true;
  default: return false;
  }
}

// "/v1/chat/completions answers 404 and /v1/responses 405: the Responses API only".
std::string responses_only_evidence(const DetectionProbes& probes) {
  return "/v1/chat/completions answers 404 and /v1/responses " +
         std::to_string(probes.responses_route.http_status) + ": the Responses API only";
}

std::string status_line(const char* path, const ProbeAnswer& answer) {
  if (!answer.answered) return std::string(path) + ": " + answer.error;
  if (answer.http_status >= 300 && answer.http_status < 400)
    return std::string(path) + ": " + describe_redirect(answer.http_status, answer.redirect_url);
  return std::string(path) + ": HTTP " + std::to_string(answer.http_status);
}

ProbeAnswer to_answer(HttpResponse response) {
  ProbeAnswer answer;
  answer.answered = response.failure == TransportFailure::none;
  answer.http_status = response.http_status;
  answer.body = std::move(response.body);
  answer.error = std::move(response.error);
  answer.redirect_url = std::move(response.redirect_url);
  return answer;
}

// GETs each path concurrently on `transport`; answers come back in the order of `paths`.
template <std::size_t N>
std::array<ProbeAnswer, N> fetch_all(HttpTransport& transport, const std::string& base_url,
                                     const std::array<const char*, N>& paths,
                                     const std::vector<std::string>& headers,
                                     const std::string& api_key, bool insecure, double timeout_s,
                                     const std::string& key_header = "") {
  std::array<HttpTransport::RequestId, N> ids{};
  for (std::size_t i = 0; i < N; ++i) {
    HttpRequest request;
    request.method = HttpRequest::Method::get;
    request.url = join_url(base_url, paths[i]);
    request.headers = headers;
    request.api_key = api_key;
    request.api_key_header = key_header;
    // Google's API refuses an API key sent as a bearer token: its model list gets the key in
    // the header the Gemini dialect uses.
    if (std::string_view(paths[i]) == k_gemini_list)
      request.api_key_header = api_key_header(Dialect::gemini);
    request.insecure = insecure;
    request.timeout_s = timeout_s;
    // Model lists of large hosted APIs stay far below this; detection never needs more.
    request.max_response_bytes = 4u << 20;
    ids[i] = transport.submit(request);
  }
  std::array<ProbeAnswer, N> answers{};
  while (transport.in_flight() > 0) {
    for (HttpTransport::Finished& finished : transport.poll(0.1))
      for (std::size_t i = 0; i < N; ++i)
        if (ids[i] == finished.id) answers[i] = to_answer(std::move(finished.response));
  }
  return answers;
}

} // namespace

bool is_llamacpp_router(const DetectionProbes& probes) {
  return props_say_router(object_of(probes.props));
}

core::Result<Dialect> decide_dialect(const std::string& base_url, const DetectionProbes& probes,
                                     std::string* explanation) {
  const auto tags = object_of(probes.tags);
  const auto models = object_of(probes.models);
  const std::string owner = models ? models_owner(*models) : "";
  // Evidence of the Ollama-compatible routes that a stronger rule overrode: printed, so that a
  // user who expected Ollama sees why its routes (no logprobs on SGLang, none at all on
  // llama.cpp) are not the ones audited.
  const std::string also_tags =
      lists_ollama_models(tags)
          ? "; /api/tags also answers, but those Ollama-compatible routes are not used"
          : "";
  const auto explain = [&](Dialect dialect, const std::string& why) -> core::Result<Dialect> {
    if (explanation != nullptr) *explanation = std::string(to_string(dialect)) + ": " + why;
    return dialect;
  };

  // 1. The server names itself, in the field it fills with its own name on every model.
  if (owner == "llamacpp") {
    std::string why = "/v1/models lists owned_by \"llamacpp\" (llama.cpp server)";
    if (is_llamacpp_router(probes))
      why += "; /props says role \"router\": each request names its model";
    return explain(Dialect::llamacpp, why + also_tags);
  }
  if (owner == "sglang")
    return explain(Dialect::sglang, "/v1/models lists owned_by \"sglang\" (SGLang)" + also_tags);
  // 2. Routes only one kind of server has, answering in its own shape.
  if (const auto model_info = object_of(probes.model_info)) {
    if (model_info->contains("model_path"))
      return explain(Dialect::sglang,
                     "/get_model_info answers with \"model_path\" (SGLang)" + also_tags);
  }
  if (const auto props = object_of(probes.props); props && ok(probes.health)) {
    std::string why = "/health and /props answer (llama.cpp server)";
    if (props_say_router(props))
      why += "; /props says role \"router\": each request names its model";
    return explain(Dialect::llamacpp, why + also_tags);
  }
  if (const auto info = object_of(probes.info)) {
    if (info->contains("model_id") &&
        (info->contains("max_concurrent_requests") || info->contains("router")))
      return explain(Dialect::tgi, "/info has \"model_id\" and TGI router fields");
  }
  if (lists_ollama_models(tags) && ollama_version(object_of(probes.version)))
    return explain(Dialect::ollama, "/api/version and /api/tags answer (Ollama)");
  // The two OpenAI-compatible servers that name themselves.
  if (owner == "vllm")
    return explain(Dialect::openai_chat, "/v1/models lists owned_by \"vllm\" (vLLM)" + also_tags);
  if (owner == "llmrepro")
    return explain(Dialect::openai_chat,
                   "/v1/models lists owned_by \"llmrepro\" (the reference engine)" + also_tags);
  // 3. The Gemini API's own model list. It comes before the generic OpenAI rule because a base
  // URL ending in /v1beta turns /v1/models into that same list, a 2xx JSON object.
  if (gemini_model_list(object_of(probes.gemini_models)) != nullptr)
    return explain(Dialect::gemini, "/v1beta/models lists \"models/...\" with "
                                    "supportedGenerationMethods (the Gemini API)");
  // 4. OpenAI-compatible servers that do not name themselves.
  if (models) {
    // Only where the list names no server: vLLM and the reference engine serve chat.
    if (responses_only(probes, false))
      return explain(Dialect::openai_responses,
                     "/v1/models answers; " + responses_only_evidence(probes) + also_tags);
    if (lists_ollama_models(tags))
      return explain(Dialect::openai_chat,
                     "/v1/models answers; /api/tags answers without Ollama's /api/version, so "
                     "those are another server's Ollama-compatible routes, which may return no "
                     "logprobs");
    return explain(Dialect::openai_chat, "/v1/models answers (OpenAI-compatible)");
  }
  if (lists_ollama_models(tags))
    return explain(Dialect::ollama, "/api/tags lists \"models\" and no other route answers");
  // 6. A Responses-only server without a model list (a proxy in front of one API).
  if (responses_only(probes, true))
    return explain(Dialect::openai_responses, "no model list (" +
                                                  status_line("/v1/models", probes.models) + "); " +
                                                  responses_only_evidence(probes));

  const std::array<const ProbeAnswer*, 10> all{
      &probes.models,       &probes.health,     &probes.props,
      &probes.tags,         &probes.info,       &probes.model_info,
      &probes.version,      &probes.chat_route, &probes.responses_route,
      &probes.gemini_models};
  bool any_answered = false;
  for (const ProbeAnswer* answer : all) any_answered = any_answered || answer->answered;
  const std::string url = strip_credentials(base_url);
  if (!any_answered)
    return core::make_error(core::ErrorCode::endpoint,
                            "cannot reach " + url + ": " + probes.models.error);
  std::string message = "cannot tell which API " + url + " speaks (" +
                        status_line("/v1/models", probes.models) + "; " +
                        status_line("/health", probes.health) + ")";
  if (probes.models.answered &&
      (probes.models.http_status == 401 || probes.models.http_status == 403))
    message += ": the endpoint refused the credentials; check --api-key-env";
  else if (!(probes.models.http_status >= 300 && probes.models.http_status < 400))
    message += ": pass --api explicitly";
  return core::make_error(core::ErrorCode::endpoint, message);
}

core::Result<std::string> pick_model(const ProbeAnswer& models, const ProbeAnswer& tags) {
  if (const auto listed = object_of(models)) {
    const auto data = listed->find("data");
    if (data != listed->end() && data->is_array() && !data->empty()) {
      const json& first = data->front();
      if (first.is_object() && first.contains("id") && first["id"].is_string())
        return first["id"].get<std::string>();
    }
  }
  if (const auto listed = object_of(tags)) {
    const auto list = listed->find("models");
    if (list != listed->end() && list->is_array() && !list->empty()) {
      const json& first = list->front();
      for (const char* field : {"name", "model"})
        if (first.is_object() && first.contains(field) && first[field].is_string())
          return first[field].get<std::string>();
    }
  }
  std::string why;
  if (!models.answered)
    why = models.error;
  else if (!ok(models))
    why = "/v1/models answered HTTP " + std::to_string(models.http_status);
  else
    why = "/v1/models has no data[0].id";
  return core::make_error(core::ErrorCode::endpoint,
                          "could not find a model to audit (" + why + "); pass --model");
}

core::Result<std::string> pick_gemini_model(const ProbeAnswer& gemini_models) {
  const std::string path(k_gemini_list);
  const std::optional<json> list = object_of(gemini_models);
  const json* models = gemini_model_list(list);
  if (models == nullptr) {
    std::string why = status_line(path.c_str(), gemini_models);
    if (ok(gemini_models)) why += ", not a Gemini model list";
    return core::make_error(core::ErrorCode::endpoint,
                            "could not find a model to audit (" + why + "); pass --model");
  }
  std::string listed;
  for (const json& model : *models) {
    const std::string name = model["name"].get<std::string>();
    for (const json& method : model["supportedGenerationMethods"])
      if (method.is_string() && method.get<std::string>() == "generateContent")
        return name.substr(k_models_prefix.size());
    listed += (listed.empty() ? "" : ", ") + name;
  }
  return core::make_error(core::ErrorCode::endpoint, "no model that " + path +
                                                         " lists supports generateContent (" +
                                                         listed + "); pass --model");
}

core::Result<Dialect> detect_dialect(const std::string& base_url,
                                     const std::vector<std::string>& headers,
                                     const std::string& api_key, bool insecure, double timeout_s,
                                     std::string* explanation, DetectionExtras* extras) {
  const std::array<const char*, 7> paths{
      "/v1/models", "/health", "/props", "/api/tags", "/info", "/get_model_info", "/api/version"};
  HttpTransport transport;
  std::array<ProbeAnswer, 7> answers =
      fetch_all(transport, base_url, paths, headers, api_key, insecure, timeout_s);
  // The route probes go second, on the connections the first round left open: a server with
  // few handler threads (cpp-httplib's default is 8 on a small machine) holds one per
  // keep-alive connection, so nine at once could leave one waiting out the keep-alive timeout.
  // The OpenAI paths are joined like every other, so a base URL naming its own API version
  // (https://api.openai.com/v1, .../v1/openai) gets "<base>/chat/completions". The Gemini list
  // goes with them, keeping the first round within eight connections.
  const std::array<const char*, 3> route_paths{"/v1/chat/completions", "/v1/responses",
                                               k_gemini_list.data()};
  std::array<ProbeAnswer, 3> routes =
      fetch_all(transport, base_url, route_paths, headers, api_key, insecure, timeout_s);
  if (extras != nullptr)
    for (std::size_t i = 0; i < paths.size(); ++i)
      extras->answers[paths[i]] = ok(answers[i]) ? answers[i].body : std::string();
  DetectionProbes probes;
  probes.models = std::move(answers[0]);
  probes.health = std::move(answers[1]);
  probes.props = std::move(answers[2]);
  probes.tags = std::move(answers[3]);
  probes.info = std::move(answers[4]);
  probes.model_info = std::move(answers[5]);
  probes.version = std::move(answers[6]);
  probes.chat_route = std::move(routes[0]);
  probes.responses_route = std::move(routes[1]);
  probes.gemini_models = std::move(routes[2]);
  auto dialect = decide_dialect(base_url, probes, explanation);
  if (extras != nullptr)
    extras->llamacpp_router =
        dialect && *dialect == Dialect::llamacpp && is_llamacpp_router(probes);
  return dialect;
}

core::ServerDescription describe_server(EndpointTarget& target, Dialect dialect, double timeout_s,
                                        const DetectionExtras* detected) {
  const std::string& base_url = target.base_url;
  const std::vector<std::string>& headers = target.headers;
  const std::string& api_key = target.api_key;
  const bool insecure = target.insecure;
  const std::map<std::string, std::string>* known = detected ? &detected->answers : nullptr;
  const std::vector<std::string> routes = description_routes(dialect);
  const auto body_of = [](const ProbeAnswer& answer) { return ok(answer) ? answer.body : ""; };
  std::vector<std::string> bodies(routes.size());
  std::vector<std::size_t> missing;
  for (std::size_t i = 0; i < routes.size(); ++i) {
    if (known != nullptr)
      if (const auto found = known->find(routes[i]); found != known->end()) {
        bodies[i] = found->second;
        continue;
      }
    missing.push_back(i);
  }
  HttpTransport transport;
  if (missing.size() == 1) {
    const std::array<const char*, 1> paths{routes[missing[0]].c_str()};
    bodies[missing[0]] =
        body_of(fetch_all(transport, base_url, paths, headers, api_key, insecure, timeout_s)[0]);
  } else if (missing.size() == 2) {
    const std::array<const char*, 2> paths{routes[missing[0]].c_str(), routes[missing[1]].c_str()};
    const auto answers =
        fetch_all(transport, base_url, paths, headers, api_key, insecure, timeout_s);
    bodies[missing[0]] = body_of(answers[0]);
    bodies[missing[1]] = body_of(answers[1]);
  }
  core::ServerDescription description = describe_from_bodies(dialect, bodies);
  target.context_per_slot = context_per_slot(description);
  return description;
}

Dialect dialect_for_suite(Dialect detected, int text_prompts, int chat_prompts) {
  const bool native_completion =
      detected == Dialect::llamacpp || detected == Dialect::sglang || detected == Dialect::tgi;
  return native_completion && chat_prompts > 0 && text_prompts == 0 ? Dialect::openai_chat
                                                                    : detected;
}

core::Result<std::string> detect_model(const std::string& base_url, Dialect dialect,
                                       const std::vector<std::string>& headers,
                                       const std::string& api_key, bool insecure,
                                       double timeout_s) {
  if (dialect == Dialect::gemini) {
    const std::array<const char*, 1> list{k_gemini_list.data()};
    HttpTransport transport;
    std::array<ProbeAnswer, 1> answer =
        fetch_all(transport, base_url, list, headers, api_key, insecure, timeout_s);
    return pick_gemini_model(answer[0]);
  }
  if (dialect == Dialect::anthropic) {
    // Anthropic's model list has OpenAI's data[].id shape, behind its own key header and
    // version; newest first, so data[0] is the newest model.
    const std::array<const char*, 1> list{"/v1/models"};
    HttpTransport transport;
    std::array<ProbeAnswer, 1> answer =
        fetch_all(transport, base_url, list, with_dialect_headers(dialect, headers), api_key,
                  insecure, timeout_s, api_key_header(dialect));
    if (!answer[0].answered)
      return core::make_error(core::ErrorCode::endpoint, "cannot reach " +
                                                             strip_credentials(base_url) + ": " +
                                                             answer[0].error);
    return pick_model(answer[0], ProbeAnswer{});
  }
  const std::array<const char*, 2> paths{"/v1/models", "/api/tags"};
  HttpTransport transport;
  std::array<ProbeAnswer, 2> answers =
      fetch_all(transport, base_url, paths, headers, api_key, insecure, timeout_s);
  if (!answers[0].answered && !answers[1].answered)
    return core::make_error(core::ErrorCode::endpoint, "cannot reach " +
                                                           strip_credentials(base_url) + ": " +
                                                           answers[0].error);
  return pick_model(answers[0], answers[1]);
}

} // namespace llmrepro::probes
