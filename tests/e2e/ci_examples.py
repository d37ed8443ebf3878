"""Shared plumbing of the CI tests (test_ci_action.py, test_ci_sharded.py): reading action.yml,
the example workflows and Kubernetes Jobs with python3-yaml, substituting their `${{ }}`
expressions, running the action's script (scripts/action-audit.sh) with a step's inputs the way
the action's Audit step maps them, and starting `llmrepro serve --batch-invariant`, whose answers
do not depend on the batch, so that a sharded audit and an unsharded one can be compared exactly.
"""

import os
import re
import subprocess
import time
import urllib.request

import yaml

import e2e_harness as h

# The placeholder the examples use for the action's repository.
ACTION_USES = "your-org/llmrepro@"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def source(*parts):
    return os.path.join(h.ARGS.source_dir, *parts)


def load_yaml(*parts):
    with open(source(*parts), encoding="utf-8") as f:
        return yaml.safe_load(f)


def load_yaml_documents(*parts):
    with open(source(*parts), encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d]


def substitute(value, context):
    """`value` with each `${{ expr }}` replaced by context[expr]; an expression the test does not
    know raises KeyError, so an example cannot grow one that no test resolved."""
    return EXPRESSION.sub(lambda m: str(context[m.group(1)]), str(value))


def action_steps(workflow):
    """(job name, step) for every step of a workflow that uses the llmrepro action."""
    return [(name, step) for name, job in workflow["jobs"].items() for step in job["steps"]
            if str(step.get("uses", "")).startswith(ACTION_USES)]


def audit_step(action):
    return next(s for s in action["runs"]["steps"] if s.get("id") == "audit")


def input_variables(action):
    """Input name -> the environment variable the Audit step hands it to the script in."""
    env = audit_step(action)["env"]
    variables = {}
    for variable, value in env.items():
        match = re.fullmatch(r"\$\{\{ inputs\.([a-z-]+) \}\}", value)
        if match:
            variables[match.group(1)] = variable
    return variables


def workspace(test, name):
    """A fresh workspace holding the repository's examples, as a checkout would."""
    path = test.path(name)
    os.makedirs(path)
    os.symlink(source("examples"), os.path.join(path, "examples"))
    return path


def start_serve(test):
    """`llmrepro serve --batch-invariant` on a loopback port; returns its URL once it answers."""
    port = h.free_port()
    test.start_llmrepro(["serve", "--port", str(port), "--batch-invariant"])
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    while True:
        try:
            opener.open(url + "/v1/models", timeout=1).read()
            return url
        except OSError:
            if time.monotonic() > deadline:
                test.fail("llmrepro serve did not answer within 20 s")
            time.sleep(0.1)


class ActionRun:
    """One run of the action's script: its process, GITHUB_OUTPUT lines and step summary."""

    def __init__(self, done, outputs, summary, workspace):
        self.done = done
        self.outputs = outputs
        self.summary = summary
        self.workspace = workspace

    def path(self, relative):
        return os.path.join(self.workspace, relative)

    def as_run(self):
        """The run as e2e_harness.Run, for assert_verdict_agrees."""
        return h.Run(["(action)"], self.done.returncode, self.done.stdout, self.done.stderr, 0)

    def describe(self):
        return (f"exit {self.done.returncode}\n--- stdout ---\n{self.done.stdout[-3000:]}\n"
                f"--- stderr ---\n{self.done.stderr[-3000:]}\n--- outputs ---\n{self.outputs}")


def run_action(test, inputs, workspace, timeout=170):
    """Runs scripts/action-audit.sh in `workspace` with `inputs` (the action's defaults for the
    others), each in the variable action.yml's Audit step names, GITHUB_OUTPUT and
    GITHUB_STEP_SUMMARY pointing at fresh files, and the built binary in place of the package."""
    action = load_yaml("action.yml")
    variables = input_variables(action)
    unknown = set(inputs) - set(action["inputs"])
    test.assertEqual(unknown, set(), "inputs the action does not declare")
    env = {}
    for name, spec in action["inputs"].items():
        env[variables[name]] = str(inputs.get(name, spec.get("default", "")))
    os.makedirs(workspace, exist_ok=True)
    output_file = workspace + ".github-output"
    summary_file = workspace + ".step-summary"
    for path in (output_file, summary_file):
        open(path, "w", encoding="utf-8").close()
    env.update({"GITHUB_OUTPUT": output_file, "GITHUB_STEP_SUMMARY": summary_file,
                "LLMREPRO_ACTION_BINARY": h.ARGS.binary})
    done = subprocess.run([source("scripts", "action-audit.sh")], cwd=workspace, text=True,
                          capture_output=True, timeout=timeout, env=test.audit_env(env),
                          stdin=subprocess.DEVNULL)
    with open(output_file, encoding="utf-8") as f:
        lines = f.read().splitlines()
    outputs = dict(line.split("=", 1) for line in lines)
    test.assertEqual(len(outputs), len(lines), f"an output written twice: {lines}")
    with open(summary_file, encoding="utf-8") as f:
        summary = f.read()
    return ActionRun(done, outputs, summary, workspace)


def files_under(root):
    """Every file below root (symbolic links not followed)."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
        found += [os.path.join(folder, f) for f in files
                  if not os.path.islink(os.path.join(folder, f))]
    return found
