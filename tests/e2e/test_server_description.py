#!/usr/bin/python3
"""Scenario: each audit of an HTTP endpoint stores what its server says about itself, every
report shows it, and `llmrepro diff` names any change in it before the numbers.

- llama.cpp (--api auto): GET /props gives build b10470-34af94cd9, 8 slots of 512 tokens; the
  JSON's endpoints[0].server holds exactly that, the terminal, Markdown and HTML show the
  one-line summary, and `llmrepro report --db` reproduces it (audit_reports checks the
  endpoints of the re-rendered JSON);
- the same server rebuilt (b10500-0123abcd) with 4 slots: `llmrepro diff` names both changes
  on its first line after the title, and in the JSON's server_changes; the completions are the
  same, so the exit code stays 0;
- TGI (--api tgi): GET /info gives version 3.3.6, the model id and its token limits;
- the embedded engine: no description (null), and no GET for one."""

import json

import e2e_harness as h
import standard_audit as std

OLD_SUMMARY = "llama.cpp b10470-34af94cd9, 8 slots, 512 tokens per slot"


class ServerDescription(h.E2ETestCase):
    def audit(self, tag, script, dialect, api):
        endpoint = self.start_endpoint(script, dialect, name=tag)
        suite = self.write_suite(f"{tag}.jsonl", std.suite()[:1])
        run, report, paths = self.audit_reports(suite, ["--endpoint", endpoint.url],
                                                extra=["--runs", "2", "--concurrency", "1"],
                                                tag=tag, api=api)
        return run, report, paths, endpoint

    def test_llamacpp_description_is_stored_shown_and_diffed(self):
        old = dict(std.script(), build_info="b10470-34af94cd9", total_slots=8, n_ctx=512)
        run, report, paths, endpoint = self.audit("old", old, "llamacpp", "auto")
        self.assertEqual(report["endpoints"][0]["server"], {
            "kind": "llama.cpp", "version": "b10470-34af94cd9", "summary": OLD_SUMMARY,
            "facts": [{"name": "slots", "value": "8"},
                      {"name": "context per slot", "value": "512"},
                      {"name": "model path", "value": f"models/{std.MODEL}.gguf"}]})
        self.assertIn(f"\nserver     {OLD_SUMMARY}\n", run.stdout, run.describe())
        with open(paths["markdown"], encoding="utf-8") as f:
            self.assertIn(f"Serving stack \u00b7 {OLD_SUMMARY}\n", f.read())
        with open(paths["html"], encoding="utf-8") as f:
            self.assertIn(OLD_SUMMARY, f.read())
        self.assertEqual([g["path"] for g in endpoint.requests("GET")].count("/props"), 1,
                         "detection's /props answer is the description's: no second GET")

        new = dict(old, build_info="b10500-0123abcd", total_slots=4)
        _, report_b, paths_b, _ = self.audit("new", new, "llamacpp", "auto")
        self.assertEqual(report_b["endpoints"][0]["server"]["version"], "b10500-0123abcd")
        diff_json = self.path("diff.json")
        diff = self.run_llmrepro(["diff", paths["db"], paths_b["db"], "--json", diff_json])
        self.assert_exit(diff, 0)
        lines = diff.stdout.split("\n")
        self.assertEqual(lines[2], "serving stack changed: llama.cpp b10470-34af94cd9 \u2192 "
                                   "b10500-0123abcd; slots 8 \u2192 4", diff.describe())
        with open(diff_json, encoding="utf-8") as f:
            result = json.load(f)
        self.assertEqual(result["server_changes"],
                         ["llama.cpp b10470-34af94cd9 -> b10500-0123abcd", "slots 8 -> 4"])
        self.assertEqual(result["verdict"]["status"], "no_change")
        import jsonschema
        with open(f"{h.ARGS.source_dir}/schemas/llmrepro.diff.v1.schema.json",
                  encoding="utf-8") as f:
            jsonschema.Draft202012Validator(json.load(f)).validate(result)

        same = self.run_llmrepro(["diff", paths["db"], paths["db"]])
        self.assert_exit(same, 0)
        self.assertNotIn("serving stack", same.stdout)

    def test_tgi_info(self):
        _, report, _, endpoint = self.audit("tgi", std.script(), "tgi", "tgi")
        self.assertEqual(report["endpoints"][0]["server"], {
            "kind": "TGI", "version": "3.3.6",
            "summary": f"TGI 3.3.6, {std.MODEL}, 4095 input tokens, 4096 total tokens",
            "facts": [{"name": "model id", "value": std.MODEL},
                      {"name": "max input tokens", "value": "4095"},
                      {"name": "max total tokens", "value": "4096"}]})
        self.assertEqual([g["path"] for g in endpoint.requests("GET")].count("/info"), 1)

    def test_embedded_engine_has_none(self):
        suite = self.write_suite("embedded.jsonl", std.suite()[:1])
        _, report, _ = self.audit_reports(suite, [], extra=["--runs", "2", "--concurrency", "1"],
                                          tag="embedded")
        self.assertIsNone(report["endpoints"][0]["server"])


if __name__ == "__main__":
    h.main()
