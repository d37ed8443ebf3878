#!/usr/bin/python3
"""Scenario: the standard scripted audit against an OpenAI chat endpoint (/v1/chat/completions),
streamed and not, with --api openai-chat: every number of the JSON report is exactly what the
script implies (see standard_audit.py), the report validates against the schema, and every
request asked for temperature 0, two candidates, the seed and the token limit."""

import e2e_harness as h
import standard_audit as std


class OpenaiChatDialect(h.E2ETestCase):
    def test_non_streaming(self):
        std.run_standard(self, "openai-chat", "openai-chat", stream=False)

    def test_streaming(self):
        std.run_standard(self, "openai-chat", "openai-chat", stream=True)


if __name__ == "__main__":
    h.main()
