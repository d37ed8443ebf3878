#!/usr/bin/python3
"""Scenario: the standard scripted audit against an OpenAI legacy completions endpoint (/v1/completions),
streamed and not, with --api openai-completions: every number of the JSON report is exactly what the
script implies (see standard_audit.py), the report validates against the schema, and every
request asked for temperature 0, two candidates, the seed and the token limit."""

import e2e_harness as h
import standard_audit as std


class OpenaiCompletionsDialect(h.E2ETestCase):
    def test_non_streaming(self):
        std.run_standard(self, "openai-completions", "openai-completions", stream=False)

    def test_streaming(self):
        std.run_standard(self, "openai-completions", "openai-completions", stream=True)


if __name__ == "__main__":
    h.main()
