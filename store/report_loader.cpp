#include "store/report_loader.hpp"

#include <optional>

namespace llmrepro::store {

core::Result<LoadedReport> load_report(const AuditDatabase& database, const core::ToolInfo& tool) {
  std::optional<core::AuditReportBuilder> builder;
  auto loaded = database.load([&](const core::AuditData& header, int prompt_index,
                                  const std::vector<core::RequestRecord>& records) {
    if (!builder) builder.emplace(header);
    builder->add_prompt(prompt_index, records);
    return core::Result<void>{};
  });
  if (!loaded) return loaded.error();
  LoadedReport out;
  out.data = std::make_unique<core::AuditData>(std::move(*loaded));
  if (!builder) builder.emplace(*out.data); // an audit with no records yet
  out.report = builder->finish(tool, *out.data);
  return out;
}

} // namespace llmrepro::store
