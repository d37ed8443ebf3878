// How two completions of a prompt compare: whether they are the same completion, and how many
// units (tokens, or characters in text mode) they share before they part. Private to core/'s
// analysis, as docs/design.md "Analysis: definitions" states it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/completion.hpp"

namespace llmrepro::core::detail {

// By tokens where every completion of the prompt carries them, by text otherwise.
enum class IdentityMode { tokens, text };

// A collision-free key for a completion. By tokens, two completions are the same only when their
// token sequences and their texts are both equal: an endpoint can return equal token strings for
// different text (byte fragments written as U+FFFD, a stream chunk whose logprobs were null).
std::string identity_key(const Completion& completion, IdentityMode mode);

// identity_key(a, mode) == identity_key(b, mode), without building either key.
bool same_identity(const Completion& a, const Completion& b, IdentityMode mode);

// Code points in `text`: the unit of text-mode positions (`divergence_unit: "char"`).
std::size_t code_points_in(std::string_view text);

// The units `a` and `b` share before they part (their first divergence position).
int shared_prefix(const Completion& a, const Completion& b, IdentityMode mode);

} // namespace llmrepro::core::detail
