#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/redaction.hpp"
#include "core/server_description.hpp"

using llmrepro::core::server_change_line;
using llmrepro::core::server_changes;
using llmrepro::core::ServerDescription;

namespace {

ServerDescription llama(const std::string& build, const std::string& slots) {
  return {"llama.cpp", build, {{"slots", slots}, {"context per slot", "512"}}, "llama.cpp"};
}

} // namespace

TEST_CASE("server_changes names the build, then each fact that changed") {
  const auto changes = server_changes(llama("b10470", "8"), llama("b10500", "4"));
  CHECK(changes == std::vector<std::string>{"llama.cpp b10470 -> b10500", "slots 8 -> 4"});
  CHECK(server_change_line(changes) ==
        "serving stack changed: llama.cpp b10470 -> b10500; slots 8 -> 4");
}

TEST_CASE("server_changes: equal or both unknown is no change") {
  CHECK(server_changes(llama("b1", "8"), llama("b1", "8")).empty());
  CHECK(server_changes({}, {}).empty());
  CHECK(server_change_line({}).empty());
}

TEST_CASE("server_changes: another kind, an unknown side, a fact one side lacks") {
  const ServerDescription tgi{"TGI", "3.3.6", {{"model id", "m"}}, "TGI 3.3.6, m"};
  CHECK(server_changes(llama("b1", "8"), tgi) ==
        std::vector<std::string>{"llama.cpp b1 -> TGI 3.3.6", "slots 8 -> (none)",
                                 "context per slot 512 -> (none)", "model id (none) -> m"});
  CHECK(server_changes({}, tgi) ==
        std::vector<std::string>{"unknown -> TGI 3.3.6", "model id (none) -> m"});
  ServerDescription unversioned = llama("", "8");
  CHECK(server_changes(unversioned, llama("b2", "8")) ==
        std::vector<std::string>{"llama.cpp (none) -> b2"});
}

TEST_CASE("server_text: a key the server echoes is redacted before the text is cut") {
  using llmrepro::core::run_secrets;
  using llmrepro::core::server_text;
  const std::string key = "sk-live-ECHOED-0123456789abcdef";
  run_secrets().add_secret(key);
  // The key straddles the cut at 120 code points: cut first, its first part would survive.
  const std::string echoed = std::string(110, 'b') + key + " tail";
  const std::string stored = server_text(echoed);
  CHECK(stored.find("sk-live") == std::string::npos);
  CHECK(stored.find(llmrepro::core::k_redacted) != std::string::npos);
  CHECK(server_text("build " + key) == "build " + std::string(llmrepro::core::k_redacted));
  run_secrets().clear();
}
