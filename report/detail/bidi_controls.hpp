// The reports' name for core/bidi_controls.hpp: one rule for the bidirectional controls in text
// the tool did not write, in every format and on stderr. Private to report/.
#pragma once

#include "core/bidi_controls.hpp"

namespace llmrepro::report::detail {

using core::bidi_marker;
using core::is_bidi_control;
using core::mark_bidi_controls;

} // namespace llmrepro::report::detail
