// Build anchor: the report module's library is never empty.
namespace llmrepro::report {}
