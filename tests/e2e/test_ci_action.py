#!/usr/bin/python3
"""Scenario: the GitHub action (action.yml) and its example workflow. action.yml, both example
workflows and the Kubernetes Jobs parse and agree: every input reaches the script through the
Audit step's environment, no run script interpolates an expression, the examples pass only
declared inputs, and the Indexed Job's shard count is one number. The action's script, run with
the example workflow's own inputs, audits `llmrepro serve --batch-invariant` (pass, exit 0) and
the embedded engine when the endpoint is empty, and the standard scripted endpoint (fail, exit 1);
an unreachable endpoint gives error, exit 3, and bad gates exit 2 before any request, with a
summary saying so and no report (a stale one is removed). Each time
the GITHUB_OUTPUT lines, the step summary and the report files say the same verdict, and the API
key reaches the endpoint but no output, summary, report or database."""

import os
import re

import ci_examples as ci
import e2e_harness as h
import standard_audit as std

KEY = "sk-e2e-action-7f3c91d2a4"
REPORTS = ("json", "html", "junit", "markdown")


def example_inputs(endpoint, suite=None):
    """The `with:` inputs of the example workflow's action step, its expressions resolved as
    GitHub would with the repository variable LLMREPRO_ENDPOINT set to `endpoint` ("": unset)."""
    (_, step), = ci.action_steps(ci.load_yaml("examples", "ci", "github-actions-action.yml"))
    context = {"vars.LLMREPRO_ENDPOINT": endpoint, "secrets.LLMREPRO_API_KEY": KEY,
               "vars.LLMREPRO_ENDPOINT == '' && '--engine-batch-invariant' || ''":
                   "" if endpoint else "--engine-batch-invariant"}
    inputs = {name: ci.substitute(value, context) for name, value in step["with"].items()}
    if suite:
        inputs["suite"] = suite
    return inputs


class CiAction(h.E2ETestCase):
    def workspace(self, name):
        return ci.workspace(self, name)

    def assert_outputs(self, action, inputs, code, verdict, reports=True):
        """The GITHUB_OUTPUT lines: exactly the action's outputs, with this verdict and code and
        the report paths given; the JSON report and the step summary agree with them, or, where
        llmrepro wrote no report (`reports` false), the summary and headline say the exit code."""
        declared = ci.load_yaml("action.yml")["outputs"]
        for name, spec in declared.items():
            self.assertEqual(spec["value"], "${{ steps.audit.outputs.%s }}" % name)
        self.assertEqual(sorted(action.outputs), sorted(declared), action.describe())
        self.assertEqual(action.done.returncode, code, action.describe())
        self.assertEqual(action.outputs["exit-code"], str(code))
        self.assertEqual(action.outputs["verdict"], verdict)
        for name in ("database", *REPORTS):
            self.assertEqual(action.outputs[name], inputs[name])
        if not reports:
            for name in REPORTS:
                self.assertFalse(os.path.exists(action.path(inputs[name])), name)
            headline = f"llmrepro exited {code} without a JSON report; see the step's log"
            self.assertEqual(action.outputs["headline"], headline)
            self.assertEqual(action.summary, f"## llmrepro\n\n{headline} (exit {code})\n")
            return None
        paths = {name: action.path(inputs[name]) for name in REPORTS}
        report = self.assert_verdict_agrees(action.as_run(), paths)
        self.assertEqual(action.outputs["headline"], report["summary"]["verdict"]["headline"])
        with open(paths["markdown"], encoding="utf-8") as f:
            self.assertEqual(action.summary, f.read())
        self.assertTrue(os.path.getsize(action.path(inputs["database"])) > 0)
        return report

    def assert_key_hidden(self, action):
        for text in (action.done.stdout, action.done.stderr, action.summary,
                     "\n".join(action.outputs.values())):
            self.assertNotIn(KEY, text)
        for path in ci.files_under(action.workspace):
            with open(path, "rb") as f:
                self.assertNotIn(KEY.encode(), f.read(), path)

    def test_action_and_examples_agree(self):
        action = ci.load_yaml("action.yml")
        self.assertEqual(action["runs"]["using"], "composite")
        variables = ci.input_variables(action)
        self.assertEqual(sorted(variables), sorted(action["inputs"]))
        self.assertEqual(sorted(variables.values()), sorted(ci.audit_step(action)["env"]))
        with open(ci.source("scripts", "action-audit.sh"), encoding="utf-8") as f:
            script = f.read()
        for name, variable in variables.items():
            self.assertEqual(variable, "INPUT_" + name.upper().replace("-", "_"))
            self.assertRegex(script, r"\$\{?" + variable + r"\b", f"input {name} unused")
        for step in action["runs"]["steps"]:
            # Inputs reach scripts through env only: an expression in a run script is injection.
            self.assertNotIn("${{", step.get("run", ""), step.get("name"))
        for example in ("github-actions-action.yml", "github-actions-sharded.yml"):
            steps = ci.action_steps(ci.load_yaml("examples", "ci", example))
            self.assertTrue(steps, example)
            for _, step in steps:
                self.assertEqual(set(step["with"]) - set(action["inputs"]), set(), example)
        shards, = [d for d in ci.load_yaml_documents("examples", "k8s", "indexed-job.yaml")
                   if d["kind"] == "Job"]
        spec = shards["spec"]
        self.assertEqual(spec["completionMode"], "Indexed")
        env = {e["name"]: e.get("value") for e in spec["template"]["spec"]["containers"][0]["env"]}
        self.assertEqual(spec["completions"], int(env["SHARDS"]))
        self.assertEqual(spec["parallelism"], spec["completions"])
        merge, = ci.load_yaml_documents("examples", "k8s", "merge-job.yaml")
        claim = [v["persistentVolumeClaim"]["claimName"] for v in
                 merge["spec"]["template"]["spec"]["volumes"]]
        self.assertEqual(claim, ["llmrepro-data"])

    def test_example_inputs_audit_the_engine(self):
        url = ci.start_serve(self)
        for endpoint in (url, ""):
            with self.subTest(endpoint=endpoint or "embedded"):
                inputs = example_inputs(endpoint)
                self.assertEqual(inputs["gates"], "--fail-on unstable --max-unique 1 "
                                                  "--max-failed-rate 0")
                action = ci.run_action(self, inputs, self.workspace("engine" if endpoint else
                                                                    "embedded"))
                report = self.assert_outputs(action, inputs, 0, "pass")
                self.assertTrue(action.outputs["headline"].startswith("PASS: "))
                self.assertEqual(report["summary"]["prompts"], 3)
                self.assertEqual(report["summary"]["requests"], 3 * 5 * 2)
                self.assertEqual(report["summary"]["failed_requests"], 0)
                self.assertEqual(report["summary"]["stable_prompts"], 3)
                self.assertEqual(report["config"]["shard"], "1/1")
                levels = [l["concurrency"] for l in report["summary"]["by_concurrency"]]
                self.assertEqual(levels, [1, 8])
                gates = {g["name"]: g["passed"] for g in report["summary"]["verdict"]["gates"]}
                self.assertEqual(gates, {"max_failed_rate": True, "fail_on_unstable": True,
                                         "max_unique": True})
                if endpoint:
                    self.assertEqual(report["endpoints"][0]["url"], url)
                else:
                    self.assertTrue(report["endpoints"][0]["embedded"])
                self.assert_key_hidden(action)

    def test_failing_gate_on_the_scripted_endpoint(self):
        endpoint = self.start_endpoint(std.script())
        workspace = self.workspace("scripted")
        self.write_suite(os.path.join("scripted", "suite.jsonl"), std.suite())
        inputs = example_inputs(endpoint.url, "suite.jsonl")
        action = ci.run_action(self, inputs, workspace)
        report = self.assert_outputs(action, inputs, 1, "fail")
        # feynman and primes answer two ways at each level (standard_audit.py).
        self.assertEqual(report["summary"]["unstable_prompts"], 2)
        gates = {g["name"]: (g["passed"], g["figure"])
                 for g in report["summary"]["verdict"]["gates"]}
        self.assertEqual(gates, {"max_failed_rate": (True, 0), "fail_on_unstable": (False, 2),
                                 "max_unique": (False, 2)})
        self.assertTrue(action.outputs["headline"].startswith("FAIL: 2 of 3 gates failed"))
        posts = endpoint.posts()
        self.assertEqual(len(posts), 4 * 5 * 2)
        for post in posts:
            self.assertIn(["Authorization", f"Bearer {KEY}"], post["headers"])
        self.assert_key_hidden(action)

    def test_unreachable_endpoint_is_an_error(self):
        inputs = example_inputs(f"http://127.0.0.1:{h.free_port()}")
        action = ci.run_action(self, inputs, self.workspace("unreachable"))
        # llmrepro stops within seconds and writes no report (docs/audit.md "Faults").
        self.assert_outputs(action, inputs, 3, "error", reports=False)
        self.assertIn("127.0.0.1", action.done.stderr)
        self.assert_key_hidden(action)

    def test_bad_inputs_exit_2_before_any_request(self):
        endpoint = self.start_endpoint(std.script())
        cases = {
            "--fail-on unstable --endpoint http://elsewhere": "'--endpoint' is not a judging flag",
            "--max-unique $(touch pwned)": "'pwned)' is not a judging flag",
            "--fail-on unstable; rm": "'rm' is not a judging flag",
            "--max-unique": "--max-unique needs a value",
        }
        for number, (gates, message) in enumerate(cases.items()):
            with self.subTest(gates=gates):
                inputs = dict(example_inputs(endpoint.url), gates=gates)
                workspace = self.workspace(f"bad{number}")
                # A report left by an earlier run must not be taken for this run's.
                os.makedirs(os.path.join(workspace, "out"))
                with open(os.path.join(workspace, inputs["json"]), "w") as f:
                    f.write('{"summary": {"verdict": {"status": "pass", "headline": "PASS"}}}')
                action = ci.run_action(self, inputs, workspace)
                self.assert_outputs(action, inputs, 2, "error", reports=False)
                self.assertIn(f"llmrepro action: input gates: {message}", action.done.stderr)
                self.assertEqual([p for p in ci.files_under(workspace) if p.endswith("pwned")],
                                 [])
        with self.subTest(case="endpoint with a command substitution"):
            inputs = dict(example_inputs("http://127.0.0.1:1/$(touch pwned)"))
            workspace = self.workspace("bad-endpoint")
            action = ci.run_action(self, inputs, workspace)
            self.assertFalse(os.path.exists(os.path.join(workspace, "pwned")))
            self.assertIn(action.done.returncode, (2, 3), action.describe())
        with self.subTest(case="no suite"):
            inputs = dict(example_inputs(endpoint.url), suite="")
            action = ci.run_action(self, inputs, self.workspace("no-suite"))
            self.assert_outputs(action, inputs, 2, "error", reports=False)
            self.assertIn("input suite is empty", action.done.stderr)
        with self.subTest(case="merge with a plan input"):
            inputs = dict(example_inputs(endpoint.url), merge="shards/*/audit.db")
            action = ci.run_action(self, inputs, self.workspace("merge-plan"))
            self.assert_outputs(action, inputs, 2, "error", reports=False)
            self.assertIn("input suite cannot be combined with merge", action.done.stderr)
        self.assertEqual(endpoint.posts(), [])
        self.assertFalse(re.search("pwned", " ".join(os.listdir(self.tmp))))


if __name__ == "__main__":
    h.main()
