// Registrations for commands whose implementation has not landed yet: each file that implements
// one removes its line here. Nothing is registered, so `llmrepro --help` does not list them.
#include "cli/commands.hpp"

namespace llmrepro::cli {
} // namespace llmrepro::cli
