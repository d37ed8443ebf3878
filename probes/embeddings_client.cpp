#include "probes/embeddings_client.hpp"

#include <nlohmann/json.hpp>

#include "probes/endpoint_url.hpp"
#include "probes/http_transport.hpp"

namespace llmrepro::probes {
namespace {

using Json = nlohmann::json;

core::Error unusable(const std::string& url, const std::string& what) {
  return core::make_error(core::ErrorCode::endpoint,
                          "embeddings endpoint " + strip_credentials(url) + ": " + what);
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

std::string embeddings_url(const std::string& url) {
  std::string base = url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (ends_with(base, "/embeddings")) return base;
  if (ends_with(base, "/v1")) return base + "/embeddings";
  return join_url(base, "/v1/embeddings");
}

core::Result<std::vector<std::vector<double>>> embed(const EmbeddingsTarget& target,
                                                     const std::vector<std::string>& inputs) {
  Json body = {{"input", inputs}, {"encoding_format", "float"}};
  if (!target.model.empty()) body["model"] = target.model;
  HttpRequest request;
  request.method = HttpRequest::Method::post;
  request.url = embeddings_url(target.url);
  request.headers = target.headers;
  request.headers.push_back("Content-Type: application/json");
  request.body = body.dump();
  request.api_key = target.api_key;
  request.insecure = target.insecure;
  request.timeout_s = target.timeout_s;
  request.max_response_bytes = target.max_response_bytes;

  HttpTransport transport;
  const HttpResponse response = transport.perform(request);
  if (response.failure != TransportFailure::none)
    return unusable(target.url, std::string(to_string(response.failure)) + ": " + response.error);
  if (response.http_status != 200) {
    std::string excerpt = response.body.substr(0, 300);
    return unusable(target.url, "HTTP " + std::to_string(response.http_status) + ": " + excerpt);
  }

  const Json parsed = Json::parse(response.body, nullptr, false);
  if (parsed.is_discarded()) return unusable(target.url, "the response is not JSON");
  const auto data = parsed.find("data");
  if (!parsed.is_object() || data == parsed.end() || !data->is_array())
    return unusable(target.url, "the response has no 'data' array");
  if (data->size() != inputs.size())
    return unusable(target.url, "'data' holds " + std::to_string(data->size()) +
                                    " embeddings for " + std::to_string(inputs.size()) + " inputs");
  std::vector<std::vector<double>> vectors(inputs.size());
  std::vector<bool> seen(inputs.size(), false);
  for (std::size_t i = 0; i < data->size(); ++i) {
    const Json& item = (*data)[i];
    const std::string where = "'data[" + std::to_string(i) + "]";
    if (!item.is_object()) return unusable(target.url, where + "' is not an object");
    const auto index = item.find("index");
    if (index == item.end() || !index->is_number_unsigned() ||
        index->get<std::size_t>() >= inputs.size() || seen[index->get<std::size_t>()])
      return unusable(target.url, where + ".index' is missing, out of range or repeated");
    const auto values = item.find("embedding");
    if (values == item.end() || !values->is_array() || values->empty())
      return unusable(target.url, where + ".embedding' is missing or not a non-empty array");
    const std::size_t slot = index->get<std::size_t>();
    seen[slot] = true;
    for (const Json& value : *values) {
      if (!value.is_number())
        return unusable(target.url, where + ".embedding' holds a value that is not a number");
      vectors[slot].push_back(value.get<double>());
    }
  }
  return vectors;
}

core::Result<core::SemanticAgreement>
measure_semantic_agreement(const EmbeddingsTarget& target, const core::AuditAnalysis& analysis,
                           double threshold) {
  core::SemanticAgreement agreement;
  agreement.model = target.model;
  agreement.threshold = threshold;
  for (const auto& prompt : analysis.prompts) {
    if (prompt.completions.empty()) continue;
    std::vector<std::string> texts;
    for (const auto& completion : prompt.completions) texts.push_back(completion.text);
    auto vectors = embed(target, texts);
    if (!vectors)
      return core::make_error(vectors.error().code,
                              "prompt '" + prompt.id + "': " + vectors.error().message);
    auto semantics = core::prompt_semantics(prompt.prompt_index, *vectors, threshold);
    if (!semantics)
      return core::make_error(core::ErrorCode::endpoint,
                              "prompt '" + prompt.id + "': " + semantics.error().message);
    agreement.prompts.push_back(*semantics);
  }
  core::summarize(agreement);
  return agreement;
}

} // namespace llmrepro::probes
