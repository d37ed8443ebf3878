#include <doctest/doctest.h>

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "cli/audit_flags.hpp"
#include "cli/audit_options.hpp"
#include "cli/config_file.hpp"
#include "tests/support/temp_dir.hpp"

using namespace llmrepro;

namespace {

// `llmrepro audit` with exactly the flags the executable registers (cli::add_audit_flags).
struct AuditCommand {
  CLI::App app{"test"};
  CLI::App* audit = app.add_subcommand("audit", "audit");
  cli::AuditOptions options;

  AuditCommand() { cli::add_audit_flags(*audit, options); }

  audit::AuditRequest parse(std::vector<std::string> args) {
    args.insert(args.begin(), "audit");
    std::vector<const char*> argv{"llmrepro"};
    for (const std::string& arg : args) argv.push_back(arg.c_str());
    app.parse(static_cast<int>(argv.size()), argv.data());
    return cli::request_of(options);
  }
};

} // namespace

TEST_CASE("request_of: nothing given is every default, and nothing is marked given") {
  AuditCommand command;
  const audit::AuditRequest request = command.parse({});
  const audit::AuditRequest defaults;
  CHECK(request.runs == defaults.runs);
  CHECK(request.levels == defaults.levels);
  CHECK(request.probes == defaults.probes);
  CHECK(request.judging.fragile_gap == core::k_default_fragile_gap);
  CHECK(request.judging.fragile_window == core::k_default_fragile_window);
  CHECK_FALSE(request.judging.given.any());
  const core::PlanFlagsGiven& plan = request.given.plan;
  CHECK_FALSE((plan.api || plan.model || plan.runs || plan.concurrency || plan.max_tokens ||
               plan.top_logprobs || plan.seed || plan.probe || plan.shard || plan.stream ||
               plan.logprobs_form || plan.profile || plan.max_concurrency));
  CHECK_FALSE((request.given.suite || request.given.max_requests || request.given.max_cost ||
               request.given.stop_after || request.given.adaptive_epsilon));
  // Every report flag, by name, with no path: none is written.
  REQUIRE(request.report_paths.size() == 4);
  for (const auto& named : request.report_paths) CHECK(named.path.empty());
  CHECK(request.notify); // notices go to stderr
  CHECK_FALSE(request.tool.version.empty());
}

TEST_CASE("request_of: each flag given is its value and marked given, the others not") {
  AuditCommand command;
  const audit::AuditRequest request = command.parse({"--suite",
                                                     "suite.jsonl",
                                                     "--endpoint",
                                                     "http://127.0.0.1:9/v1",
                                                     "--runs",
                                                     "7",
                                                     "--concurrency",
                                                     "1,4",
                                                     "--model",
                                                     "m",
                                                     "--max-requests",
                                                     "100",
                                                     "--adaptive-epsilon",
                                                     "0.02",
                                                     "--fragile-gap",
                                                     "0.1",
                                                     "--fail-on",
                                                     "unstable,fragile",
                                                     "--json",
                                                     "out.json",
                                                     "--markdown",
                                                     "out.md"});
  CHECK(request.suite == "suite.jsonl");
  CHECK(request.endpoints == std::vector<std::string>{"http://127.0.0.1:9/v1"});
  CHECK(request.runs == 7);
  CHECK(request.levels == std::vector<int>{1, 4});
  CHECK(request.model == "m");
  CHECK(request.max_requests == 100);
  CHECK(request.adaptive_epsilon == 0.02);
  CHECK(request.judging.fragile_gap == 0.1);
  CHECK(request.judging.fail_on == "unstable,fragile");
  const audit::GivenValues& given = request.given;
  CHECK(given.suite);
  CHECK(given.plan.runs);
  CHECK(given.plan.concurrency);
  CHECK(given.plan.model);
  CHECK_FALSE(given.plan.max_tokens);
  CHECK_FALSE(given.plan.seed);
  CHECK(given.max_requests);
  CHECK_FALSE(given.max_tokens_total);
  CHECK(given.adaptive_epsilon);
  CHECK_FALSE(given.adaptive_initial);
  CHECK(request.judging.given.fragile_gap);
  CHECK(request.judging.given.fail_on);
  CHECK_FALSE(request.judging.given.fragile_window);
  REQUIRE(request.report_paths.size() == 4);
  CHECK(request.report_paths[0].flag == "--json");
  CHECK(request.report_paths[0].path == "out.json");
  CHECK(request.report_paths[1].path.empty()); // --html
  CHECK(request.report_paths[2].path.empty()); // --junit
  CHECK(request.report_paths[3].flag == "--markdown");
  CHECK(request.report_paths[3].path == "out.md");
}

TEST_CASE("request_of: a value from --config is given like a flag, and the command line wins") {
  const testing::TempDir dir("cli");
  const std::string path = dir.write(
      "llmrepro.toml", "runs = 9\nmax-tokens = 8\nconcurrency = [1, 8, 32]\nfragile_window = 20\n");
  AuditCommand command;
  command.parse({"--config", path, "--runs", "3"});
  REQUIRE(cli::apply_config_file(*command.audit, command.options.config));
  const audit::AuditRequest request = cli::request_of(command.options);
  CHECK(request.runs == 3);
  CHECK(request.max_tokens == 8);
  CHECK(request.levels == std::vector<int>{1, 8, 32});
  CHECK(request.judging.fragile_window == 20);
  CHECK(request.given.plan.runs);
  CHECK(request.given.plan.max_tokens);
  CHECK(request.given.plan.concurrency);
  CHECK(request.judging.given.fragile_window);
  CHECK_FALSE(request.given.plan.top_logprobs);
}
