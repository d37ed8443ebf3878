// Build anchor: the engine module's library is never empty.
namespace llmrepro::engine {}
