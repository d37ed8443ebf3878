#include "probes/endpoint_detector.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <optional>
#include <utility>

#include "probes/endpoint_url.hpp"
#include "probes/http_transport.hpp"

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

bool models_owned_by_llamacpp(const json& models) {
  const auto data = models.find("data");
  if (data == models.end() || !data->is_array()) return false;
  for (const json& model : *data) {
    if (!model.is_object()) continue;
    const auto owner = model.find("owned_by");
    if (owner != model.end() && owner->is_string() && owner->get<std::string>() == "llamacpp")
      return true;
  }
  return false;
}

std::string status_line(const char* path, const ProbeAnswer& answer) {
  if (!answer.answered) return std::string(path) + ": " + answer.error;
  return std::string(path) + ": HTTP " + std::to_string(answer.http_status);
}

ProbeAnswer to_answer(HttpResponse response) {
  ProbeAnswer answer;
  answer.answered = response.failure == TransportFailure::none;
  answer.http_status = response.http_status;
  answer.body = std::move(response.body);
  answer.error = std::move(response.error);
  return answer;
}

// GETs each path concurrently on one transport; answers come back in the order of `paths`.
template <std::size_t N>
std::array<ProbeAnswer, N> fetch_all(const std::string& base_url,
                                     const std::array<const char*, N>& paths,
                                     const std::vector<std::string>& headers,
                                     const std::string& api_key, bool insecure, double timeout_s) {
  HttpTransport transport;
  std::array<HttpTransport::RequestId, N> ids{};
  for (std::size_t i = 0; i < N; ++i) {
    HttpRequest request;
    request.method = HttpRequest::Method::get;
    request.url = join_url(base_url, paths[i]);
    request.headers = headers;
    request.api_key = api_key;
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

core::Result<Dialect> decide_dialect(const std::string& base_url, const DetectionProbes& probes,
                                     std::string* explanation) {
  const auto explain = [&](Dialect dialect, const std::string& why) -> core::Result<Dialect> {
    if (explanation != nullptr) *explanation = std::string(to_string(dialect)) + ": " + why;
    return dialect;
  };

  if (const auto tags = object_of(probes.tags)) {
    const auto models = tags->find("models");
    if (models != tags->end() && models->is_array())
      return explain(Dialect::ollama, "/api/tags lists \"models\" (Ollama)");
  }
  if (const auto info = object_of(probes.info)) {
    if (info->contains("model_id") &&
        (info->contains("max_concurrent_requests") || info->contains("router")))
      return explain(Dialect::tgi, "/info has \"model_id\" and TGI router fields");
  }
  if (const auto model_info = object_of(probes.model_info)) {
    if (model_info->contains("model_path"))
      return explain(Dialect::sglang, "/get_model_info answers with \"model_path\" (SGLang)");
  }
  const auto models = object_of(probes.models);
  if (ok(probes.health) && object_of(probes.props))
    return explain(Dialect::llamacpp, "/health and /props answer (llama.cpp server)");
  if (models && models_owned_by_llamacpp(*models))
    return explain(Dialect::llamacpp, "/v1/models lists owned_by \"llamacpp\"");
  if (models) return explain(Dialect::openai_chat, "/v1/models answers (OpenAI-compatible)");

  const std::array<const ProbeAnswer*, 6> all{&probes.models, &probes.health, &probes.props,
                                              &probes.tags,   &probes.info,   &probes.model_info};
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
  else
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

core::Result<Dialect> detect_dialect(const std::string& base_url,
                                     const std::vector<std::string>& headers,
                                     const std::string& api_key, bool insecure, double timeout_s,
                                     std::string* explanation) {
  const std::array<const char*, 6> paths{"/v1/models", "/health", "/props",
                                         "/api/tags",  "/info",   "/get_model_info"};
  std::array<ProbeAnswer, 6> answers =
      fetch_all(base_url, paths, headers, api_key, insecure, timeout_s);
  DetectionProbes probes;
  probes.models = std::move(answers[0]);
  probes.health = std::move(answers[1]);
  probes.props = std::move(answers[2]);
  probes.tags = std::move(answers[3]);
  probes.info = std::move(answers[4]);
  probes.model_info = std::move(answers[5]);
  return decide_dialect(base_url, probes, explanation);
}

core::Result<std::string> detect_model(const std::string& base_url,
                                       const std::vector<std::string>& headers,
                                       const std::string& api_key, bool insecure,
                                       double timeout_s) {
  const std::array<const char*, 2> paths{"/v1/models", "/api/tags"};
  std::array<ProbeAnswer, 2> answers =
      fetch_all(base_url, paths, headers, api_key, insecure, timeout_s);
  if (!answers[0].answered && !answers[1].answered)
    return core::make_error(core::ErrorCode::endpoint, "cannot reach " +
                                                           strip_credentials(base_url) + ": " +
                                                           answers[0].error);
  return pick_model(answers[0], answers[1]);
}

} // namespace llmrepro::probes
