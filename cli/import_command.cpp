// `llmrepro import --format jsonl|chain-determinism FILE... --db OUT.db`: recorded repeated
// responses (core/replay_import.hpp) made into an audit database that `report`, `diff` and the
// gates read like any other.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <chrono>
#include <filesystem>
#include <memory>

#include "cli/commands.hpp"
#include "cli/help_export.hpp"
#include "core/replay_import.hpp"
#include "store/audit_database.hpp"
#include "store/database_lock.hpp"
#include "store/output_file.hpp"

namespace llmrepro::cli {

namespace {

struct ImportOptions {
  std::string format;
  std::vector<std::string> inputs;
  std::string db;
  bool overwrite = false;
  bool quiet = false;
};

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int run_import(const ImportOptions& options) {
  auto format = core::parse_replay_format(options.format);
  if (!format) return report_error(format.error());
  // The database may be no input, checked before anything is read or written.
  std::vector<store::NamedPath> inputs;
  for (const auto& input : options.inputs) inputs.push_back({"input", input});
  if (auto checked = store::check_output_paths({{"--db", options.db}}, inputs); !checked)
    return report_error(checked.error());
  if (std::filesystem::exists(options.db) && !options.overwrite)
    return report_error(core::make_error(
        core::ErrorCode::usage,
        fmt::format("'{}' already exists: pass --overwrite to replace it", options.db)));

  // Every line is read and checked before the database is touched.
  core::ReplayImport import(
      "import:" + std::filesystem::path(options.inputs.front()).filename().string(), *format);
  for (const auto& input : options.inputs)
    if (auto added = core::add_replay_file(input, *format, import); !added)
      return report_error(added.error());
  auto data = std::move(import).finish(now_ms());
  if (!data) return report_error(data.error());

  auto lock = store::DatabaseLock::acquire(options.db, "llmrepro import", "--db");
  if (!lock) return report_error(lock.error());
  if (options.overwrite)
    for (const auto& suffix : {"", "-wal", "-shm"}) std::filesystem::remove(options.db + suffix);
  auto created = store::AuditDatabase::create(options.db, *data);
  if (!created) return report_error(created.error());
  created->check_records_against_plan();
  std::size_t failed = 0;
  for (const auto& record : data->records)
    if (!record.outcome.ok) ++failed;
  if (!options.quiet)
    print_stderr(fmt::format("llmrepro: imported {} recorded responses ({} failed) of {} prompts "
                             "for model '{}' into '{}' ({})\n",
                             data->records.size(), failed, data->suite.prompts.size(),
                             data->endpoints.front().model, options.db, data->info.status));
  return k_exit_pass;
}

} // namespace

void register_import_command(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<ImportOptions>();
  CLI::App* command = app.add_subcommand(
      "import", "Turn recorded repeated responses of one model into an audit database");
  command
      ->add_option("--format", options->format,
                   "The files' format: jsonl (llmrepro's replay lines) or chain-determinism "
                   "(chain-determinism-bench v1 raw files, decompressed)")
      ->required()
      ->check(value_choices({core::to_string(core::ReplayFormat::jsonl),
                             core::to_string(core::ReplayFormat::chain_determinism)}));
  command->add_option("inputs", options->inputs, "Replay files of one model (JSON lines)")
      ->required();
  command->add_option("--db", options->db, "Audit database to create")->required();
  command->add_flag("--overwrite", options->overwrite, "Replace an existing database");
  command->add_flag("--quiet", options->quiet, "Print nothing but errors");
  command->callback([options, &result] { result.exit_code = run_import(*options); });
}

} // namespace llmrepro::cli
