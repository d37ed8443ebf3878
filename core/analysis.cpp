#include "core/analysis.hpp"
namespace llmrepro::core {
// Placeholder while the analysis is being written.
AuditAnalysis analyse(const Suite&, const std::vector<RequestRecord>&, const AnalysisConfig&, int) { return {}; }
int shared_prefix_length(const Completion&, const Completion&) { return 0; }
}
