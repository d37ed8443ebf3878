// LLMREPRO_ASSIGN_OR_RETURN: the one early return of the store's code, which reads many Results in
// a row (columns, JSON fields) and stops at the first error. Private to report/store.
#pragma once

#include <utility>

// Assigns a Result's value to `target` or returns its error from the enclosing function.
#define LLMREPRO_ASSIGN_OR_RETURN(target, expression)                                              \
  do {                                                                                             \
    auto llmrepro_result = (expression);                                                           \
    if (!llmrepro_result) return llmrepro_result.error();                                          \
    target = std::move(*llmrepro_result);                                                          \
  } while (false)
