// A server description (core/server_description.hpp) as the JSON report and the diff write it:
// null when unknown, else {"kind", "version", "summary", "facts": [{"name", "value"}, ...]} with
// the facts in the server's own order. Private to report/.
#pragma once

#include <nlohmann/json.hpp>

#include "core/server_description.hpp"

namespace llmrepro::report::detail {

// `Json`: nlohmann::json or nlohmann::ordered_json, as the report builds its document.
template <typename Json = nlohmann::json> Json server_json(const core::ServerDescription& server) {
  if (!server.known()) return nullptr;
  Json facts = Json::array();
  for (const core::ServerFact& fact : server.facts)
    facts.push_back({{"name", fact.name}, {"value", fact.value}});
  Json out;
  out["kind"] = server.kind;
  out["version"] = server.version;
  out["summary"] = server.summary;
  out["facts"] = facts;
  return out;
}

} // namespace llmrepro::report::detail
