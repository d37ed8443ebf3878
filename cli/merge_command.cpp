// `llmrepro merge OUT.db IN.db...`: joins the shard databases of one audit (`--shard i/n`) into
// one database whose report is the report of one unsharded run.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>

#include "audit/session.hpp"
#include "cli/commands.hpp"
#include "cli/judging_options.hpp"
#include "cli/report_outputs.hpp"
#include "core/audit_merge.hpp"
#include "core/audit_report.hpp"
#include "core/semantic_agreement.hpp"
#include "store/audit_database.hpp"
#include "store/database_lock.hpp"
#include "store/output_file.hpp"

namespace llmrepro::cli {

namespace {

struct MergeOptions {
  std::string output;
  std::vector<std::string> inputs;
  bool overwrite = false;
  ReportOutputs outputs;
  bool quiet = false;
};

// The shards' semantic agreement joined, when every shard measured it with one model and threshold;
// otherwise none (a partial measure would misstate the share).
std::optional<core::SemanticAgreement>
merged_semantics(const std::vector<std::optional<core::SemanticAgreement>>& semantics) {
  if (semantics.empty() || !semantics.front()) return std::nullopt;
  core::SemanticAgreement merged = *semantics.front();
  merged.prompts.clear();
  for (const auto& semantic : semantics) {
    if (!semantic || semantic->model != merged.model || semantic->threshold != merged.threshold)
      return std::nullopt;
    merged.prompts.insert(merged.prompts.end(), semantic->prompts.begin(), semantic->prompts.end());
  }
  std::sort(merged.prompts.begin(), merged.prompts.end(),
            [](const auto& a, const auto& b) { return a.prompt_index < b.prompt_index; });
  core::summarize(merged);
  return merged;
}

int run_merge(const MergeOptions& options) {
  // The output database and the reports: none may be an input or each other, before any read.
  std::vector<store::NamedPath> inputs;
  for (const auto& input : options.inputs) inputs.push_back({"input", input});
  std::vector<store::NamedPath> outputs = named_outputs(options.outputs);
  outputs.push_back({"the output", options.output});
  if (auto checked = store::check_output_paths(outputs, {}, inputs); !checked)
    return report_error(checked.error());
  if (auto checked = store::check_output_paths(named_outputs(options.outputs), {},
                                               {{"the output", options.output}});
      !checked)
    return report_error(checked.error());
  // One writer per database: held until the merged database and its reports are written.
  auto lock = store::DatabaseLock::acquire(options.output, "llmrepro merge", "output");
  if (!lock) return report_error(lock.error());
  std::vector<core::AuditData> shards;
  std::vector<std::optional<core::SemanticAgreement>> semantics;
  for (const auto& input : options.inputs) {
    auto database = open_audit_database(input);
    if (!database) return report_error(database.error());
    auto data = database->load();
    if (!data) return report_error(data.error());
    shards.push_back(std::move(*data));
    auto semantic = database->load_semantic();
    if (!semantic) return report_error(semantic.error());
    semantics.push_back(std::move(*semantic));
  }
  auto merged = core::merge_shards(shards);
  if (!merged) return report_error(merged.error());

  if (std::filesystem::exists(options.output)) {
    if (!options.overwrite)
      return report_error(core::make_error(
          core::ErrorCode::usage,
          fmt::format("'{}' already exists: pass --overwrite to replace it", options.output)));
    for (const auto& suffix : {"", "-wal", "-shm"})
      std::filesystem::remove(options.output + suffix);
  }
  auto created = store::AuditDatabase::create(options.output, *merged);
  if (!created) return report_error(created.error());
  created->check_records_against_plan();
  if (!merged->probe_activity.empty()) {
    if (auto stored = created->store_probe_activity(merged->probe_activity); !stored)
      return report_error(stored.error());
  }
  if (merged->adaptive) {
    if (auto stored = created->store_adaptive(*merged->adaptive); !stored)
      return report_error(stored.error());
  }
  if (auto semantic = merged_semantics(semantics)) {
    if (auto stored = created->store_semantic(*semantic); !stored)
      return report_error(stored.error());
  }
  // Reloaded so that the report reads exactly what `llmrepro report --db OUT` will read.
  auto session = audit::load_session(*created, {.tool = tool_info(), .lean = true});
  if (!session) return report_error(session.error());
  const core::AuditReport& audit_report = session->report;
  const std::string merged_note = fmt::format(
      "llmrepro: merged {} shard database(s) into '{}' ({} records, {})\n", shards.size(),
      options.output, core::recorded_requests(*session->data), session->data->info.status);
  if (auto emitted = emit_reports(audit_report, options.outputs, options.quiet, merged_note);
      !emitted)
    return report_error(emitted.error());
  return exit_code_of(audit_report.verdict);
}

} // namespace

void register_merge_command(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<MergeOptions>();
  CLI::App* command = app.add_subcommand(
      "merge", "Join the shard databases of one audit (--shard i/n) into one audit database");
  command->add_option("output", options->output, "Merged audit database to create")->required();
  command->add_option("inputs", options->inputs, "Shard audit databases")->required();
  command->add_flag("--overwrite", options->overwrite, "Replace an existing output database");
  add_report_output_options(*command, options->outputs);
  command->add_flag("--quiet", options->quiet,
                    "Print nothing but errors and, unless the verdict is pass, its headline");
  command->callback([options, &result] { result.exit_code = run_merge(*options); });
}

} // namespace llmrepro::cli
