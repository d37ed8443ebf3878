#include <doctest/doctest.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "cli/config_file.hpp"
#include "cli/option_groups.hpp"
#include "tests/support/temp_dir.hpp"

using namespace llmrepro;
using cli::apply_config_file;

namespace {

// A command shaped like `llmrepro audit`: options of each kind in two help groups.
struct Command {
  CLI::App app{"test"};
  CLI::App* audit = app.add_subcommand("audit", "audit");
  std::string config;
  std::string suite;
  int runs = 5;
  int max_tokens = 128;
  double timeout = 120.0;
  std::size_t max_response_bytes = 16u << 20;
  std::vector<int> levels{1, 8, 32};
  std::vector<std::string> headers;
  std::vector<std::string> endpoints;
  std::string api = "auto";
  std::string api_key_env;
  bool stream = false;

  Command() {
    cli::add_config_option(*audit, config);
    {
      const cli::OptionGroupScope group{*audit, cli::k_group_endpoint};
      audit->add_option("--endpoint", endpoints);
      audit->add_option("--header", headers);
      audit->add_option("--api", api)->check(CLI::IsMember({"auto", "openai-chat"}));
      audit->add_option("--api-key-env", api_key_env);
      audit->add_option("--timeout", timeout);
      audit->add_option("--max-response-bytes", max_response_bytes)
          ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 34));
    }
    const cli::OptionGroupScope group{*audit, cli::k_group_plan};
    audit->add_option("--suite", suite);
    audit->add_option("--runs", runs);
    audit->add_option("--max-tokens", max_tokens);
    audit->add_option("--concurrency", levels)->delimiter(',');
    audit->add_flag("--stream", stream);
  }

  // Parses `arguments` after "audit", then applies the file at `path`.
  core::Result<void> run(std::vector<std::string> arguments, const std::string& path) {
    arguments.insert(arguments.begin(), "audit");
    std::reverse(arguments.begin(), arguments.end()); // CLI11 reads a vector from its back
    app.parse(arguments);
    return apply_config_file(*audit, path);
  }
};

std::string error_of(const core::Result<void>& result) {
  REQUIRE_FALSE(result);
  CHECK(result.error().code == core::ErrorCode::usage);
  return result.error().message;
}

} // namespace

TEST_CASE("apply_config_file maps keys onto the options") {
  testing::TempDir dir("config");
  Command command;
  const auto path = dir.write("ci.toml", "suite = 'smoke.jsonl'\n"
                                         "max_tokens = 8\n"
                                         "concurrency = [1, 4, 16]\n"
                                         "stream = true\n"
                                         "header = ['X-Team: infra', 'X-Run: 7']\n"
                                         "timeout = 30\n"
                                         "api-key-env = 'OPENAI_API_KEY'\n"
                                         "[plan]\n"
                                         "runs = 10\n");
  REQUIRE(command.run({}, path));
  CHECK(command.suite == "smoke.jsonl");
  CHECK(command.max_tokens == 8);
  CHECK(command.levels == std::vector<int>{1, 4, 16});
  CHECK(command.stream);
  CHECK(command.headers == std::vector<std::string>{"X-Team: infra", "X-Run: 7"});
  CHECK(command.timeout == 30.0);
  CHECK(command.api_key_env == "OPENAI_API_KEY");
  CHECK(command.runs == 10);
  // A value from the file counts as given, as the flag would.
  CHECK(command.audit->get_option("--runs")->count() == 1);

  SUBCASE("a repeatable option takes one value as well as an array") {
    Command again;
    REQUIRE(again.run({}, dir.write("list.toml", "concurrency = 4\n")));
    CHECK(again.levels == std::vector<int>{4});
  }
  SUBCASE("a flag set to false stays false") {
    Command again;
    REQUIRE(again.run({}, dir.write("false.toml", "stream = false\n")));
    CHECK_FALSE(again.stream);
  }
  SUBCASE("an empty path applies nothing") {
    Command again;
    REQUIRE(again.run({}, ""));
    CHECK(again.runs == 5);
  }
}

TEST_CASE("apply_config_file: the command line wins") {
  testing::TempDir dir("config");
  Command command;
  const auto path = dir.write("ci.toml", "runs = 10\nmax-tokens = 8\nheader = ['X-A: 1']\n");
  REQUIRE(command.run({"--runs", "3", "--header", "X-B: 2"}, path));
  CHECK(command.runs == 3);
  CHECK(command.max_tokens == 8);
  CHECK(command.headers == std::vector<std::string>{"X-B: 2"});
}

TEST_CASE("apply_config_file names FILE:LINE and the key of each error") {
  testing::TempDir dir("config");
  const auto error_for = [&dir](const std::string& text) {
    Command command;
    return error_of(command.run({}, dir.write("ci.toml", text)));
  };
  const std::string file = dir.file("ci.toml");
  SUBCASE("unknown key") {
    CHECK(error_for("runs = 2\n\nrunz = 3\n") ==
          file + ":3: runz: unknown key (no flag --runz in `llmrepro audit`)");
  }
  SUBCASE("--help and --config are not keys") {
    CHECK(error_for("config = 'other.toml'\n") ==
          file + ":1: config: unknown key (no flag --config in `llmrepro audit`)");
  }
  SUBCASE("wrong types") {
    CHECK(error_for("runs = '10'\n") == file + ":1: runs: expected an integer");
    CHECK(error_for("runs = 1.5\n") == file + ":1: runs: expected an integer");
    CHECK(error_for("timeout = 'slow'\n") == file + ":1: timeout: expected a number");
    CHECK(error_for("suite = 3\n") == file + ":1: suite: expected a string");
    CHECK(error_for("stream = 1\n") == file + ":1: stream: expected true or false");
    CHECK(error_for("runs = [1, 2]\n") == file + ":1: runs: takes one value, not an array");
    CHECK(error_for("concurrency = [1, 'x']\n") ==
          file + ":1: concurrency: expected an integer in every element of the array");
    CHECK(error_for("concurrency = []\n") == file + ":1: concurrency: the array is empty");
  }
  SUBCASE("a value the option's validator refuses") {
    CHECK(error_for("\nmax_response_bytes = 5\n") ==
          file + ":2: max_response_bytes: --max-response-bytes: Value 5 not in range 1024 to "
                 "17179869184");
  }
  SUBCASE("a value outside the named choices") {
    CHECK(error_for("api = 'nope'\n") == file + ":1: api: 'nope' is not one of auto, openai-chat");
  }
  SUBCASE("tables") {
    CHECK(error_for("[plan]\ntimeout = 3\n") ==
          file + ":2: plan.timeout: --timeout belongs in [endpoint] or at the top level");
    CHECK(error_for("[planning]\nruns = 3\n") ==
          file + ":1: planning: unknown table (the tables are the help's groups, in lower case "
                 "with - for spaces: endpoint, options, plan)");
    CHECK(error_for("runs = 3\n[plan]\nruns = 4\n") == file + ":3: plan.runs: given twice");
  }
  SUBCASE("TOML syntax") {
    CHECK(error_for("runs = 3\nruns = = 4\n").rfind(file + ":2: ", 0) == 0);
  }
  SUBCASE("a file that cannot be read") {
    Command command;
    CHECK(error_of(command.run({}, dir.file("missing.toml"))) ==
          dir.file("missing.toml") + ": File could not be opened for reading");
  }
}

TEST_CASE("apply_config_file refuses a literal secret") {
  testing::TempDir dir("config");
  const std::string advice = "a config file may not hold a secret: put the key in an environment "
                             "variable and name it with api-key-env (--api-key-env)";
  const auto error_for = [&dir](const std::string& text, std::vector<std::string> flags = {}) {
    Command command;
    return error_of(command.run(std::move(flags), dir.write("ci.toml", text)));
  };
  const std::string file = dir.file("ci.toml");
  for (const char* header :
       {"Authorization: Bearer sk-live-1234", "x-api-key: abcd1234", "Api-Key: abcd1234",
        "X-Goog-Api-Key: abcd1234", "Proxy-Authorization: Basic abcd"}) {
    CAPTURE(header);
    CHECK(error_for(std::string("header = ['X-A: 1', '") + header + "']\n") ==
          file + ":1: header: holds a credential header; " + advice);
  }
  CHECK(error_for("endpoint = 'https://user:pw@api.example.com/v1'\n") ==
        file + ":1: endpoint: holds a URL with credentials; " + advice);
  CHECK(error_for("endpoint = 'https://api.example.com/v1?region=eu&key=AIza1234'\n") ==
        file + ":1: endpoint: holds a URL with credentials; " + advice);
  // Refused also when the command line would win: the file itself must not hold it.
  CHECK(error_for("header = 'Authorization: Bearer sk-live-1234'\n", {"--header", "X-B: 2"}) ==
        file + ":1: header: holds a credential header; " + advice);
  // A URL with '@' past its authority, or an empty key parameter, holds no credentials; a
  // variable's name is no secret.
  Command command;
  REQUIRE(command.run({}, dir.write("ok.toml", "endpoint = 'http://h:8000/v1?by=a@b&key='\n"
                                               "api-key-env = 'MY_KEY'\n")));
  CHECK(command.endpoints == std::vector<std::string>{"http://h:8000/v1?by=a@b&key="});
}

TEST_CASE("config_origins_in names the lines of the flags a message names") {
  testing::TempDir dir("config");
  Command command;
  const auto path = dir.write("origins.toml", "runs = 0\nmax-tokens = 8\n");
  REQUIRE(command.run({}, path));
  CHECK(cli::config_origins_in("--runs must be at least 1 (got 0)") ==
        " (--runs from " + path + ":1)");
  CHECK(cli::config_origins_in("--max-tokens-total must be at least 1").empty());
  CHECK(cli::config_origins_in("--max-tokens and --runs") ==
        " (--runs from " + path + ":1, --max-tokens from " + path + ":2)");
}

TEST_CASE("config_table_name") {
  CHECK(cli::config_table_name(cli::k_group_judging) == "judging-and-gates");
  CHECK(cli::config_table_name(cli::k_group_plan) == "plan");
}
