#include "probes/server_description.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <utility>

namespace llmrepro::probes {
namespace {

using nlohmann::json;

std::optional<json> parse_object(const std::string& body) {
  try {
    json parsed = json::parse(body);
    if (parsed.is_object()) return parsed;
  } catch (const json::exception&) {
  }
  return std::nullopt;
}

// A scalar as text (a string as it is, a number or boolean as JSON spells it); empty for null,
// objects and arrays, which no fact reads.
std::string scalar_text(const json& object, const char* key) {
  const auto found = object.find(key);
  if (found == object.end()) return "";
  if (found->is_string()) return core::server_text(found->get<std::string>());
  if (found->is_number() || found->is_boolean()) return core::server_text(found->dump());
  return "";
}

void add_fact(core::ServerDescription& description, const char* name, const std::string& value) {
  if (!value.empty()) description.facts.push_back({name, value});
}

std::string fact(const core::ServerDescription& description, const char* name) {
  for (const core::ServerFact& f : description.facts)
    if (f.name == name) return f.value;
  return "";
}

std::string head(const core::ServerDescription& description) {
  return description.version.empty() ? description.kind
                                     : description.kind + " " + description.version;
}

core::ServerDescription version_only(const std::string& body, const char* kind) {
  const auto object = parse_object(body);
  if (!object) return {};
  const auto version = object->find("version");
  if (version == object->end() || !version->is_string()) return {};
  core::ServerDescription description;
  description.kind = kind;
  description.version = core::server_text(version->get<std::string>());
  description.summary = head(description);
  return description;
}

// llama.cpp's context per slot: default_generation_settings.n_ctx, else a top-level n_ctx shared
// by total_slots; empty where neither says.
std::string llamacpp_slot_context(const json& props) {
  const auto settings = props.find("default_generation_settings");
  if (settings != props.end() && settings->is_object()) {
    std::string n_ctx = scalar_text(*settings, "n_ctx");
    if (!n_ctx.empty()) return n_ctx;
  }
  const auto total = props.find("n_ctx");
  const auto slots = props.find("total_slots");
  if (total == props.end() || !total->is_number_integer() || slots == props.end() ||
      !slots->is_number_integer() || slots->get<long long>() <= 0)
    return "";
  return std::to_string(total->get<long long>() / slots->get<long long>());
}

} // namespace

core::ServerDescription describe_llamacpp_props(const std::string& body) {
  const auto props = parse_object(body);
  if (!props || (!props->contains("build_info") && !props->contains("total_slots"))) return {};
  core::ServerDescription description;
  description.kind = "llama.cpp";
  description.version = scalar_text(*props, "build_info");
  add_fact(description, "slots", scalar_text(*props, "total_slots"));
  add_fact(description, "context per slot", llamacpp_slot_context(*props));
  add_fact(description, "model path", scalar_text(*props, "model_path"));
  add_fact(description, "role", scalar_text(*props, "role"));
  description.summary = head(description);
  if (const std::string slots = fact(description, "slots"); !slots.empty())
    description.summary += ", " + slots + (slots == "1" ? " slot" : " slots");
  if (const std::string n_ctx = fact(description, "context per slot"); !n_ctx.empty())
    description.summary += ", " + n_ctx + " tokens per slot";
  return description;
}

std::optional<int> context_per_slot(const core::ServerDescription& description) {
  const std::string value = fact(description, "context per slot");
  if (value.empty() || value.size() > 9) return std::nullopt;
  int tokens = 0;
  for (const char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    tokens = tokens * 10 + (c - '0');
  }
  if (tokens <= 0) return std::nullopt;
  return tokens;
}

core::ServerDescription describe_sglang_server_info(const std::string& body) {
  const auto info = parse_object(body);
  if (!info || scalar_text(*info, "version").empty() || scalar_text(*info, "model_path").empty())
    return {};
  core::ServerDescription description;
  description.kind = "SGLang";
  description.version = scalar_text(*info, "version");
  add_fact(description, "model path", scalar_text(*info, "model_path"));
  add_fact(description, "tp size", scalar_text(*info, "tp_size"));
  add_fact(description, "dp size", scalar_text(*info, "dp_size"));
  add_fact(description, "context length", scalar_text(*info, "context_length"));
  add_fact(description, "max running requests", scalar_text(*info, "max_running_requests"));
  add_fact(description, "attention backend", scalar_text(*info, "attention_backend"));
  const auto radix = info->find("disable_radix_cache");
  if (radix != info->end() && radix->is_boolean())
    add_fact(description, "radix cache", radix->get<bool>() ? "off" : "on");
  add_fact(description, "deterministic inference",
           scalar_text(*info, "enable_deterministic_inference"));
  add_fact(description, "random seed", scalar_text(*info, "random_seed"));
  description.summary = head(description);
  if (const std::string tp = fact(description, "tp size"); !tp.empty())
    description.summary += ", tp " + tp;
  if (const std::string radix_cache = fact(description, "radix cache"); !radix_cache.empty())
    description.summary += ", radix cache " + radix_cache;
  return description;
}

core::ServerDescription describe_vllm_version(const std::string& body) {
  return version_only(body, "vLLM");
}

core::ServerDescription describe_ollama_version(const std::string& body) {
  return version_only(body, "Ollama");
}

core::ServerDescription describe_tgi_info(const std::string& body) {
  const auto info = parse_object(body);
  if (!info || scalar_text(*info, "model_id").empty() || scalar_text(*info, "version").empty())
    return {};
  core::ServerDescription description;
  description.kind = "TGI";
  description.version = scalar_text(*info, "version");
  add_fact(description, "sha", scalar_text(*info, "sha"));
  add_fact(description, "model id", scalar_text(*info, "model_id"));
  // TGI 2.1 renamed max_input_length to max_input_tokens.
  std::string max_input = scalar_text(*info, "max_input_tokens");
  if (max_input.empty()) max_input = scalar_text(*info, "max_input_length");
  add_fact(description, "max input tokens", max_input);
  add_fact(description, "max total tokens", scalar_text(*info, "max_total_tokens"));
  description.summary = head(description) + ", " + fact(description, "model id");
  if (!max_input.empty()) description.summary += ", " + max_input + " input tokens";
  if (const std::string total = fact(description, "max total tokens"); !total.empty())
    description.summary += ", " + total + " total tokens";
  return description;
}

std::vector<std::string> description_routes(Dialect dialect) {
  switch (dialect) {
  case Dialect::llamacpp: return {"/props"};
  case Dialect::sglang: return {"/get_server_info"};
  case Dialect::tgi: return {"/info"};
  case Dialect::ollama: return {"/api/version"};
  case Dialect::openai_chat:
  case Dialect::openai_completions: return {"/version", "/props"};
  case Dialect::openai_responses:
  case Dialect::gemini:
  case Dialect::anthropic: return {};
  }
  return {};
}

core::ServerDescription describe_from_bodies(Dialect dialect,
                                             const std::vector<std::string>& bodies) {
  const std::vector<std::string> routes = description_routes(dialect);
  for (std::size_t i = 0; i < routes.size() && i < bodies.size(); ++i) {
    const std::string& route = routes[i];
    core::ServerDescription description;
    if (route == "/props")
      description = describe_llamacpp_props(bodies[i]);
    else if (route == "/get_server_info")
      description = describe_sglang_server_info(bodies[i]);
    else if (route == "/info")
      description = describe_tgi_info(bodies[i]);
    else if (route == "/api/version")
      description = describe_ollama_version(bodies[i]);
    else if (route == "/version")
      description = describe_vllm_version(bodies[i]);
    if (description.known()) return description;
  }
  return {};
}

} // namespace llmrepro::probes
