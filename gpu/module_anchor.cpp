// Build anchor: the gpu module's library is never empty.
namespace llmrepro::gpu {}
