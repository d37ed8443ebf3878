#include "probes/logprob_check.hpp"

#include <string_view>

#include "probes/detail/request_builder.hpp"
#include "probes/http_transport.hpp"

namespace llmrepro::probes {

bool logprob_check_applies(const EndpointTarget& target) {
  return target.dialect == Dialect::openai_chat &&
         chat_request_form_of(target.base_url, target.logprobs_form) ==
             ChatRequestForm::openai_current;
}

LogprobSupport check_logprob_support(const EndpointTarget& target, const SchedulerConfig& config,
                                     const core::Prompt& prompt) {
  GenerationParams params = detail::params_for(target, config);
  params.stream = false;
  LogprobSupport support;
  support.model = params.model;
  HttpTransport transport;
  HttpResponse response =
      transport.perform(detail::generation_request(target, config, prompt, params));
  if (response.failure != TransportFailure::none) return support;
  if (response.http_status == 400) {
    std::string reason = describe_error_body(response.body);
    // "Unsupported parameter: 'logprobs' is not supported with this model." A 400 about the
    // candidate count ("top_logprobs must be at most 20") is a request error, not this.
    if (reason.find("logprobs") != std::string::npos &&
        (reason.find("not supported") != std::string::npos ||
         reason.find("Unsupported") != std::string::npos ||
         reason.find("unsupported") != std::string::npos)) {
      support.returns_logprobs = false;
      support.rejects_logprobs = true;
      support.reason = "it rejects the `logprobs` parameter (HTTP 400: " + reason + ")";
    }
    return support;
  }
  if (response.http_status < 200 || response.http_status >= 300) return support;
  auto completion = parse_response(target.dialect, response.body, false);
  if (!completion) return support;
  if (!completion->model.empty()) support.model = completion->model;
  if (!completion->has_logprobs) {
    support.returns_logprobs = false;
    support.reason = "it answered without `logprobs`";
  }
  return support;
}

} // namespace llmrepro::probes
