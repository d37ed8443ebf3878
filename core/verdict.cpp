#include "core/verdict.hpp"
namespace llmrepro::core {
Verdict judge(const AuditAnalysis&, const GateConfig&, std::optional<double>) { return {}; }
}
