// `llmrepro diff`: A/B comparison of two audits, saying which differences exceed the noise.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <memory>

#include "audit/session.hpp"
#include "cli/commands.hpp"
#include "cli/config_file.hpp"
#include "cli/report_outputs.hpp"
#include "core/audit_diff.hpp"
#include "report/diff_report.hpp"
#include "store/output_file.hpp"

namespace llmrepro::cli {

namespace {

struct DiffOptions {
  std::string config; // --config FILE
  std::string a;
  std::string b;
  std::string json;
  std::string html;
  std::string markdown;
  double alpha = 0.05;
  int resamples = 10000;
  std::uint64_t seed = 0;
  bool quiet = false;
};

// A stored audit and its report, as `llmrepro report --db PATH` would show it.
core::Result<audit::Session> load_audit(const std::string& path) {
  return audit::load_session(path, {.tool = tool_info()}, print_stderr);
}

int run_diff(const DiffOptions& options) {
  if (!(options.alpha > 0 && options.alpha < 1)) // NaN too
    return report_error(core::make_error(core::ErrorCode::usage, "--alpha must be in (0, 1)"));
  if (options.resamples < 100)
    return report_error(
        core::make_error(core::ErrorCode::usage, "--resamples must be at least 100"));
  if (auto checked = store::check_output_paths(
          {{"--json", options.json}, {"--html", options.html}, {"--markdown", options.markdown}},
          {}, {{"A", options.a}, {"B", options.b}});
      !checked)
    return report_error(checked.error());
  auto a = load_audit(options.a);
  if (!a) return report_error(a.error());
  auto b = load_audit(options.b);
  if (!b) return report_error(b.error());
  // Audits of different plans differ by the plan alone (3 runs against 12 read as a regression):
  // refused, naming every value that differs, before anything is compared.
  if (const auto differences = core::diff_plan_differences(a->data->config, b->data->config);
      !differences.empty()) {
    std::string named;
    for (const core::DiffPlanDifference& difference : differences)
      named += (named.empty() ? "" : "; ") + core::to_string(difference);
    return report_error(core::make_error(
        core::ErrorCode::usage,
        "A and B were audited with different plans, so their figures are not comparable: " +
            named));
  }
  const core::AuditReport& report_a = a->report;
  const core::AuditReport& report_b = b->report;

  core::DiffConfig config;
  config.alpha = options.alpha;
  config.bootstrap_resamples = options.resamples;
  config.seed = options.seed;
  const core::AuditDiff diff = core::diff_audits(report_a, report_b, config);

  const struct {
    const std::string& path;
    std::string (*render)(const core::AuditDiff&);
  } files[] = {{options.json, report::render_diff_json},
               {options.html, report::render_diff_html},
               {options.markdown, report::render_diff_markdown}};
  for (const auto& file : files) {
    if (file.path.empty()) continue;
    if (auto written = write_file_atomically(file.path, file.render(diff)); !written)
      return report_error(written.error());
  }
  // A diff on standard output (-) keeps it to itself: the summary goes to stderr.
  const bool to_stderr = options.json == "-" || options.html == "-" || options.markdown == "-";
  if (!options.quiet)
    fmt::print(to_stderr ? stderr : stdout, "{}", report::render_diff_markdown(diff));
  // Failed requests are lost evidence: no finding either way, the exit an unjudged audit has.
  if (diff.evidence_lost()) {
    for (const std::string& line : diff.lost_evidence)
      fmt::print(stderr, "error: lost evidence: {}\n", line);
    return k_exit_endpoint;
  }
  return diff.regression() ? k_exit_gate_failed : k_exit_pass;
}

} // namespace

void register_diff_command(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<DiffOptions>();
  CLI::App* command = app.add_subcommand(
      "diff", "Compare two audits (A, then B) and say which differences exceed run-to-run noise");
  add_config_option(*command, options->config);
  command->add_option("a", options->a, "Audit database A (the baseline)")->required();
  command->add_option("b", options->b, "Audit database B (the change)")->required();
  command->add_option("--json", options->json, "Write the diff as JSON (llmrepro.diff.v1)");
  command->add_option("--html", options->html, "Write the diff as a self-contained HTML page");
  command->add_option("--markdown", options->markdown, "Write the diff as Markdown");
  command->add_option("--alpha", options->alpha, "Significance level")->capture_default_str();
  command->add_option("--resamples", options->resamples, "Paired bootstrap resamples")
      ->capture_default_str();
  command->add_option("--seed", options->seed, "Seed of the bootstrap")->capture_default_str();
  command->add_flag("--quiet", options->quiet, "Print nothing but errors");
  command->callback([command, options, &result] {
    if (auto applied = apply_config_file(*command, options->config); !applied) {
      result.exit_code = report_error(applied.error());
      return;
    }
    result.exit_code = run_diff(*options);
  });
}

} // namespace llmrepro::cli
