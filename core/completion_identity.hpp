// How two completions of a prompt compare: whether they are the same completion, and how many
// units (tokens, or characters in text mode) they share before they part. Private to core/'s
// analysis, as docs/design.md "Analysis: definitions" states it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/completion.hpp"

namespace llmrepro::core::detail {

// By tokens where every completion of the prompt carries them, by text otherwise.
enum class IdentityMode { tokens, text };

// Whether `a` and `b` are the same completion. By text, when their texts are equal; by tokens,
// only when their token sequences and their texts are both equal: an endpoint can return equal
// token strings for different text (byte fragments written as U+FFFD, a stream chunk whose
// logprobs were null).
bool same_identity(const Completion& a, const Completion& b, IdentityMode mode);

// A hash equal for completions that are the same (same_identity), to find a completion among the
// distinct ones seen; same_identity decides between those of equal hashes.
std::uint64_t identity_hash(const Completion& completion, IdentityMode mode);

// Code points in `text`: the unit of text-mode positions (`divergence_unit: "char"`).
std::size_t code_points_in(std::string_view text);

// The units `a` and `b` share before they part (their first divergence position).
int shared_prefix(const Completion& a, const Completion& b, IdentityMode mode);

} // namespace llmrepro::core::detail
