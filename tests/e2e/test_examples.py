#!/usr/bin/python3
"""Scenario: every example is exercised. Each suite under examples/suites loads and audits the
embedded reference engine with every request succeeding; the GitHub Actions workflow's audit step,
run as written by bash, audits a scripted endpoint when LLMREPRO_ENDPOINT is set and the embedded
engine when it is not, and writes the JSON, HTML, JUnit and Markdown it publishes; the config file
llmrepro.toml, that step's flags in TOML, audits the scripted endpoint with the same stored plan,
requests and verdict as those flags, and plans the same embedded-engine audit; each recipe's
`llmrepro audit` command line (vLLM, SGLang, llama.cpp, Ollama, OpenAI, Gemini, Together,
TensorRT-LLM) is accepted by a scripted endpoint of that recipe's dialect, with --endpoint
replaced by the endpoint's URL, and sends each of its suite's prompts runs x levels times."""

import glob
import json
import os
import re
import shlex
import subprocess

import e2e_harness as h

# Recipes for hosted APIs name real hosts; the test points --endpoint at the scripted endpoint, so
# forms chosen by host (OpenAI's max_completion_tokens, Together's integer logprobs) do not apply.
RECIPE_DIALECTS = {"vllm": "vllm", "sglang": "sglang", "llamacpp": "llamacpp", "ollama": "ollama",
                   "openai": "openai-chat", "gemini": "gemini", "together": "openai-chat",
                   "trtllm": "openai-chat"}


def examples(*parts):
    return os.path.join(h.ARGS.source_dir, "examples", *parts)


def suite_prompts(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip() and not line.startswith("#")]


def scripted_key(prompt):
    if "prompt" in prompt:
        return prompt["prompt"]
    return [m for m in prompt["messages"] if m["role"] == "user"][-1]["content"]


def script_for(suite_path, model="scripted-model"):
    """One fixed completion per prompt of a suite: a stable endpoint that answers all of it."""
    tokens = [[" Paris", -0.1, [[" Paris", -0.1], [" Lyon", -2.5]]],
              [".", -0.2, [[".", -0.2], ["!", -1.9]]]]
    return {"model": model, "prompts": {scripted_key(p): [{"tokens": tokens}]
                                        for p in suite_prompts(suite_path)}}


def option(args, name):
    return args[args.index(name) + 1]


def workflow_audit_step(path):
    """The `run: |` block of the workflow step named Audit, dedented."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    start = lines.index("      - name: Audit")
    run = next(i for i in range(start, len(lines)) if lines[i].strip() == "run: |")
    indent = len(lines[run + 1]) - len(lines[run + 1].lstrip())
    block = []
    for line in lines[run + 1:]:
        if line.strip() and len(line) - len(line.lstrip()) < indent:
            break
        block.append(line[indent:])
    return "\n".join(block).strip() + "\n"


class Examples(h.E2ETestCase):
    def test_every_suite_audits_the_reference_engine(self):
        suites = sorted(glob.glob(examples("suites", "*.jsonl")))
        names = [os.path.basename(s) for s in suites]
        for expected in ("smoke.jsonl", "qa.jsonl", "json.jsonl", "long.jsonl", "prefix.jsonl",
                         "engine-demo.jsonl"):
            self.assertIn(expected, names)
        for suite in suites:
            name = os.path.basename(suite)
            with self.subTest(suite=name):
                report_path = self.path(name + ".json")
                run = self.run_llmrepro(["audit", "--suite", suite, "--runs", "2",
                                         "--concurrency", "1,4", "--max-tokens", "16",
                                         "--db", self.path(name + ".db"), "--json", report_path],
                                        timeout=170)
                self.assert_exit(run, 0)
                report = self.load_report(report_path)
                count = len(suite_prompts(suite))
                self.assertEqual(report["summary"]["prompts"], count)
                self.assertEqual(report["summary"]["requests"], count * 2 * 2)
                self.assertEqual(report["summary"]["failed_requests"], 0, report["errors"])
                self.assertEqual(report["audit"]["status"], "complete")

    def test_workflow_audit_step_runs_as_written(self):
        step = workflow_audit_step(examples("ci", "github-actions.yml"))
        self.assertIn("llmrepro audit", step)
        # The workflow runs from a checkout with the build under build/.
        os.makedirs(self.path("build/cli"))
        os.symlink(h.ARGS.binary, self.path("build/cli/llmrepro"))
        os.symlink(examples(), self.path("examples"))
        smoke = examples("suites", "smoke.jsonl")
        endpoint = self.start_endpoint(script_for(smoke))
        for target in (endpoint.url, ""):
            with self.subTest(endpoint=target or "embedded"):
                before = len(endpoint.posts())
                done = subprocess.run(["bash", "-e", "-c", step], cwd=self.tmp, text=True,
                                      capture_output=True, timeout=170,
                                      env=self.audit_env({"LLMREPRO_ENDPOINT": target,
                                                          "LLMREPRO_API_KEY": ""}))
                self.assertEqual(done.returncode, 0, done.stdout[-3000:] + done.stderr[-3000:])
                report = self.load_report(self.path("out/audit.json"))
                for name in ("audit.db", "audit.html", "audit.xml", "audit.md"):
                    self.assertTrue(os.path.getsize(self.path("out/" + name)) > 0, name)
                self.assertEqual(report["summary"]["prompts"], len(suite_prompts(smoke)))
                self.assertEqual(report["summary"]["verdict"]["status"], "pass")
                sent = len(endpoint.posts()) - before
                if target:
                    self.assertEqual(report["endpoints"][0]["url"], endpoint.url)
                    self.assertEqual(sent, len(suite_prompts(smoke)) * 5 * 2)
                else:
                    self.assertTrue(report["endpoints"][0]["embedded"])
                    self.assertEqual(sent, 0)

    def test_config_file_is_the_workflow_audit(self):
        step = workflow_audit_step(examples("ci", "github-actions.yml"))
        flags = shlex.split(step[step.index("--suite"):step.index("\n", step.index("--suite"))])
        self.assertEqual(flags[-2:], ["--fail-on", "unstable"], "the step's flags end the line")
        config = ["--config", examples("llmrepro.toml")]
        # Run from a checkout: the file's paths are relative to it, as the step's are.
        os.symlink(examples(), self.path("examples"))
        os.makedirs(self.path("out"))
        smoke = examples("suites", "smoke.jsonl")
        endpoint = self.start_endpoint(script_for(smoke))
        reports = {}
        for name, args in (("flags", flags), ("config", config)):
            before = len(endpoint.posts())
            run = self.run_llmrepro(["audit", "--endpoint", endpoint.url] + args, timeout=170)
            self.assert_exit(run, 0)
            reports[name] = self.load_report(self.path("out/audit.json"))
            self.assertEqual(len(endpoint.posts()) - before, len(suite_prompts(smoke)) * 5 * 2)
        self.assertEqual(reports["config"]["config"], reports["flags"]["config"])
        self.assertEqual(reports["config"]["summary"]["verdict"],
                         reports["flags"]["summary"]["verdict"])
        self.assertEqual(reports["config"]["summary"]["requests"], len(suite_prompts(smoke)) * 10)
        # Without --endpoint: the embedded engine, the same plan either way.
        plans = [self.run_llmrepro(["audit", "--dry-run"] + args) for args in (flags, config)]
        for plan in plans:
            self.assert_exit(plan, 0)
        self.assertIn("the embedded reference engine", plans[0].stdout)
        self.assertEqual(plans[1].stdout, plans[0].stdout)

    def test_every_recipe_audit_is_accepted(self):
        recipes = sorted(glob.glob(examples("recipes", "*.md")))
        self.assertEqual(sorted(os.path.basename(r)[:-3] for r in recipes), sorted(RECIPE_DIALECTS))
        for recipe in recipes:
            name = os.path.basename(recipe)[:-3]
            with open(recipe, encoding="utf-8") as f:
                text = f.read()
            commands = [line for line in text.splitlines() if line.startswith("llmrepro audit ")]
            self.assertEqual(len(commands), 1, f"{name}: one audit command line")
            self.assertTrue(re.search(r"^```sh$", text, re.M), f"{name}: a shell block")
            args = shlex.split(commands[0])[1:]
            suite = examples("suites", os.path.basename(option(args, "--suite")))
            model = option(args, "--model") if "--model" in args else "scripted-model"
            with self.subTest(recipe=name):
                endpoint = self.start_endpoint(script_for(suite, model),
                                               dialect=RECIPE_DIALECTS[name], name=name)
                args[args.index("--endpoint") + 1] = endpoint.url
                args[args.index("--suite") + 1] = suite
                if "--json" in args:
                    report_path = self.path(option(args, "--json"))
                else:
                    report_path = self.path(name + "-report.json")
                    args += ["--json", report_path]
                # The recipe names the key's variable, which must then hold a key (docs/security.md
                # "Keys"); it reaches the endpoint in the dialect's key header.
                env, key = {}, None
                if "--api-key-env" in args:
                    key = f"recipe-key-{name}"
                    env[option(args, "--api-key-env")] = key
                run = self.run_llmrepro(args, env=env)
                self.assert_exit(run, 0)
                if key is not None:
                    gemini = option(args, "--api") == "gemini"
                    header = "x-goog-api-key" if gemini else "authorization"
                    value = key if gemini else f"Bearer {key}"
                    for item in endpoint.posts():
                        self.assertIn([header, value],
                                      [[k.lower(), v] for k, v in item["headers"]], name)
                report = self.load_report(report_path)
                levels = option(args, "--concurrency").split(",")
                runs = int(option(args, "--runs"))
                prompts = len(suite_prompts(suite))
                self.assertEqual(report["summary"]["failed_requests"], 0, report["errors"])
                self.assertEqual(len(endpoint.posts()), prompts * runs * len(levels))
                self.assertEqual(report["endpoints"][0]["dialect"], option(args, "--api"))
                self.assertEqual(report["summary"]["unstable_prompts"], 0)


if __name__ == "__main__":
    h.main()
