#include "probes/detail/request_builder.hpp"

#include <utility>

#include "probes/endpoint_url.hpp"

namespace llmrepro::probes::detail {

GenerationParams params_for(const EndpointTarget& target, const SchedulerConfig& config) {
  GenerationParams params = config.params;
  if (!target.model.empty()) params.model = target.model;
  // A router needs the name and a single-model server ignores it, so a name the user gave is
  // always sent: --api llamacpp against a router works without detection.
  if (target.llamacpp_router || target.model_given) params.native_model = true;
  params.chat_form = chat_request_form_of(target.base_url, target.logprobs_form);
  if (target.rejects_logprobs) params.logprobs = false;
  if (target.provider_temperature) params.provider_temperature = true;
  if (target.omit_seed) params.send_seed = false;
  return params;
}

HttpRequest get_request(const EndpointTarget& target, const SchedulerConfig& config,
                        const std::string& path) {
  HttpRequest request;
  request.method = HttpRequest::Method::get;
  request.url = join_url(target.base_url, path);
  request.headers = with_dialect_headers(target.dialect, target.headers);
  request.api_key = target.api_key;
  request.api_key_header = api_key_header(target.dialect);
  request.timeout_s = config.timeout_s;
  request.max_response_bytes = config.max_response_bytes;
  request.insecure = target.insecure;
  return request;
}

HttpRequest post_request(const EndpointTarget& target, const SchedulerConfig& config,
                         const std::string& path, std::string body) {
  HttpRequest request = get_request(target, config, path);
  request.method = HttpRequest::Method::post;
  request.body = std::move(body);
  request.headers.insert(request.headers.begin(), "Content-Type: application/json");
  return request;
}

HttpRequest generation_request(const EndpointTarget& target, const SchedulerConfig& config,
                               const core::Prompt& prompt, const GenerationParams& params) {
  DialectRequest built = build_request(target.dialect, prompt, params);
  return post_request(target, config, built.path, std::move(built.body));
}

} // namespace llmrepro::probes::detail
