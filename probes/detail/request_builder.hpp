// Private to probes: the one place where the scheduler assembles an HTTP request, for audited
// requests and side traffic alike, so that every request carries the target's headers, key and
// TLS setting and the run's timeout and size limit.
#pragma once

#include <string>

#include "core/suite.hpp"
#include "probes/dialect.hpp"
#include "probes/http_transport.hpp"
#include "probes/scheduler.hpp"

namespace llmrepro::probes::detail {

// The generation parameters of the run as sent to `target`: its own model where it names one.
GenerationParams params_for(const EndpointTarget& target, const SchedulerConfig& config);

// A JSON POST of `body` to `path` joined onto the target's base URL.
HttpRequest post_request(const EndpointTarget& target, const SchedulerConfig& config,
                         const std::string& path, std::string body);

// A GET of `path` joined onto the target's base URL, with the target's key and headers.
HttpRequest get_request(const EndpointTarget& target, const SchedulerConfig& config,
                        const std::string& path);

// The generation request for `prompt` in the target's dialect, with `params`.
HttpRequest generation_request(const EndpointTarget& target, const SchedulerConfig& config,
                               const core::Prompt& prompt, const GenerationParams& params);

} // namespace llmrepro::probes::detail
