#!/usr/bin/python3
"""Scenario: the sharded-audit examples run as written against `llmrepro serve --batch-invariant`.
The GitHub Actions workflow (examples/ci/github-actions-sharded.yml): its shard job's action
inputs, for each value of its matrix, each in a workspace of its own; each shard's database is
carried to the merge job where upload-artifact and download-artifact would put it; the merge
job's action inputs merge and report. The Kubernetes Jobs (examples/k8s/): the Indexed Job's
container command for JOB_COMPLETION_INDEX 0 to completions-1 on one shared data folder, then
the merge Job's. Each merged report passes and equals the report of the same audit run unsharded
(test_scale_shard_merge.py's comparison: everything but ids, clocks and speeds); a merge missing
a shard is partial (error, exit 3)."""

import json
import os
import re
import shlex
import shutil
import subprocess

import ci_examples as ci
import e2e_harness as h
from test_scale_shard_merge import stable

KEY = "sk-e2e-sharded-51b0e6"


def demo_prompt_ids():
    with open(ci.source("examples", "suites", "engine-demo.jsonl"), encoding="utf-8") as f:
        return [json.loads(line)["id"] for line in f if line.strip() and not line.startswith("#")]


def report_gates(job):
    """The judging flags of the `llmrepro report` line of a Job's container command: its words
    after `report` less the database and the report files."""
    script = job["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    words = shlex.split(script[script.index("llmrepro report"):].replace("\\\n", " "))[2:]
    gates = []
    while words:
        flag, value = words.pop(0), words.pop(0)
        if flag not in ("--db", "--json", "--html", "--junit", "--markdown"):
            gates += [flag, value]
    return gates


class CiSharded(h.E2ETestCase):
    def workspace(self, name):
        return ci.workspace(self, name)

    def judged(self, db, gates):
        """The JSON report of the audit in `db` judged with `gates`, as the merge judges."""
        path = db + ".judged.json"
        run = self.run_llmrepro(["report", "--db", db, "--json", path, "--quiet", *gates])
        self.assert_exit(run, 0)
        return self.load_report(path)

    def assert_same_audit(self, merged, whole):
        self.assertEqual(merged["audit"]["status"], "complete")
        self.assertEqual(merged["config"]["shard"], "1/1")
        self.assertEqual(json.dumps(stable(merged), sort_keys=True, indent=1),
                         json.dumps(stable(whole), sort_keys=True, indent=1))

    def test_github_actions_matrix_and_merge(self):
        url = ci.start_serve(self)
        workflow = ci.load_yaml("examples", "ci", "github-actions-sharded.yml")
        shard_job, merge_job = workflow["jobs"]["shard"], workflow["jobs"]["merge"]
        self.assertEqual(merge_job["needs"], "shard")
        (_, shard_step), (_, merge_step) = ci.action_steps(workflow)
        matrix = shard_job["strategy"]["matrix"]["shard"]
        count = int(re.fullmatch(r"\$\{\{ matrix\.shard \}\}/(\d+)",
                                 shard_step["with"]["shard"]).group(1))
        self.assertEqual(matrix, list(range(1, count + 1)))
        upload, = [s for s in shard_job["steps"] if "upload-artifact" in s.get("uses", "")]
        download, = [s for s in merge_job["steps"] if "download-artifact" in s.get("uses", "")]
        context = {"vars.LLMREPRO_ENDPOINT": url, "secrets.LLMREPRO_API_KEY": KEY}

        def inputs(step, **extra):
            return {name: ci.substitute(value, {**context, **extra})
                    for name, value in step["with"].items()}

        merge_dir = self.path("merge")
        os.makedirs(merge_dir)
        prompts = demo_prompt_ids()
        for shard in matrix:
            with self.subTest(shard=shard):
                given = inputs(shard_step, **{"matrix.shard": shard})
                self.assertEqual(given["shard"], f"{shard}/{count}")
                action = ci.run_action(self, given, self.workspace(f"shard{shard}"))
                self.assertEqual(action.done.returncode, 0, action.describe())
                self.assertEqual(action.outputs["verdict"], "pass")
                report = self.load_report(action.path(given["json"]))
                self.assertEqual(report["config"]["shard"], f"{shard}/{count}")
                owned = [p for n, p in enumerate(prompts) if n % count == shard - 1]
                self.assertEqual(sorted(p["id"] for p in report["prompts"]), sorted(owned))
                # upload-artifact of one file, then download-artifact by pattern: the file lands
                # in <path>/<artifact name>/.
                name = ci.substitute(upload["with"]["name"], {"matrix.shard": shard})
                self.assertRegex(name, download["with"]["pattern"].replace("*", ".*"))
                carried = os.path.join(merge_dir, download["with"]["path"], name)
                os.makedirs(carried)
                shutil.copy(action.path(upload["with"]["path"]), carried)

        given = inputs(merge_step)
        merged_action = ci.run_action(self, given, merge_dir)
        self.assertEqual(merged_action.done.returncode, 0, merged_action.describe())
        self.assertEqual(merged_action.outputs["verdict"], "pass")
        paths = {f: merged_action.path(given[f]) for f, _ in h.REPORT_FORMATS}
        merged = self.assert_verdict_agrees(merged_action.as_run(), paths)
        with open(paths["markdown"], encoding="utf-8") as f:
            self.assertEqual(merged_action.summary, f.read())
        gates = [g["name"] for g in merged["summary"]["verdict"]["gates"]]
        self.assertEqual(gates, ["max_failed_rate", "fail_on_unstable"])
        self.assertEqual(merged["summary"]["prompts"], len(prompts))

        # The same audit unsharded: the shard job's inputs without the shard.
        whole_action = ci.run_action(self, dict(inputs(shard_step, **{"matrix.shard": 1}),
                                                shard=""), self.workspace("whole"))
        self.assertEqual(whole_action.done.returncode, 0, whole_action.describe())
        whole = self.judged(whole_action.path(given["database"]), given["gates"].split())
        self.assert_same_audit(merged, whole)

        with self.subTest(case="a shard missing"):
            shutil.rmtree(os.path.join(merge_dir, download["with"]["path"],
                                       ci.substitute(upload["with"]["name"],
                                                     {"matrix.shard": count})))
            partial = ci.run_action(self, given, merge_dir)
            self.assertEqual(partial.done.returncode, 3, partial.describe())
            self.assertEqual(partial.outputs["verdict"], "error")
            report = self.load_report(partial.path(given["json"]))
            self.assertEqual(report["audit"]["status"], "partial")
            self.assertEqual(len(report["prompts"]), len(prompts) - len(prompts[count - 1::count]))

    def test_kubernetes_indexed_job_and_merge(self):
        url = ci.start_serve(self)
        with open(ci.source("examples", "k8s", "indexed-job.yaml"), encoding="utf-8") as f:
            self.assertIn("kubectl create configmap llmrepro-suite "
                          "--from-file=suite.jsonl=examples/suites/engine-demo.jsonl", f.read())
        shards_job, = [d for d in ci.load_yaml_documents("examples", "k8s", "indexed-job.yaml")
                       if d["kind"] == "Job"]
        merge_job, = ci.load_yaml_documents("examples", "k8s", "merge-job.yaml")
        count = shards_job["spec"]["completions"]
        bin_dir = self.path("bin")
        os.makedirs(bin_dir)
        os.symlink(h.ARGS.binary, os.path.join(bin_dir, "llmrepro"))

        def run_container(job, root, index=None, **overrides):
            """The Job's container command, its mount paths moved under `root`, with the Job's
            environment (a secret's value: KEY), LLMREPRO_ENDPOINT at the engine and llmrepro
            on PATH."""
            container, = job["spec"]["template"]["spec"]["containers"]
            env = {"PATH": bin_dir + os.pathsep + os.environ["PATH"]}
            for item in container.get("env", []):
                env[item["name"]] = item["value"] if "value" in item else KEY
            env["LLMREPRO_ENDPOINT"] = url
            if index is not None:
                env["JOB_COMPLETION_INDEX"] = str(index)
            env.update(overrides)
            command = list(container["command"])
            for mount in container["volumeMounts"]:
                moved = os.path.join(root, mount["mountPath"].strip("/"))
                os.makedirs(moved, exist_ok=True)
                pattern = r"(?<![\w/.-])" + re.escape(mount["mountPath"]) + r"(?=/|\b)"
                command = [re.sub(pattern, lambda _: moved, part) for part in command]
            self.assertNotIn(KEY, " ".join(command))
            return subprocess.run(command, cwd=root, text=True, capture_output=True,
                                  timeout=170, env=self.audit_env(env),
                                  stdin=subprocess.DEVNULL)

        def add_suite(root):
            os.makedirs(os.path.join(root, "suite"))
            shutil.copy(ci.source("examples", "suites", "engine-demo.jsonl"),
                        os.path.join(root, "suite", "suite.jsonl"))

        cluster = self.path("cluster")
        add_suite(cluster)
        prompts = demo_prompt_ids()
        for index in range(count):
            with self.subTest(index=index):
                done = run_container(shards_job, cluster, index)
                self.assertEqual(done.returncode, 0, done.stdout[-2000:] + done.stderr[-2000:])
                report = self.load_report(os.path.join(cluster, "data",
                                                       f"shard-{index + 1}.json"))
                self.assertEqual(report["config"]["shard"], f"{index + 1}/{count}")
                self.assertEqual(sorted(p["id"] for p in report["prompts"]),
                                 sorted(prompts[index::count]))
        done = run_container(merge_job, cluster)
        self.assertEqual(done.returncode, 0, done.stdout[-2000:] + done.stderr[-2000:])
        data = os.path.join(cluster, "data")
        paths = {"json": os.path.join(data, "audit.json"), "html": os.path.join(data, "audit.html"),
                 "junit": os.path.join(data, "audit.xml"),
                 "markdown": os.path.join(data, "audit.md")}
        merged = self.assert_verdict_agrees(h.Run(["(merge job)"], done.returncode, done.stdout,
                                                  done.stderr, 0), paths)
        self.assertEqual([g["name"] for g in merged["summary"]["verdict"]["gates"]],
                         ["max_failed_rate", "fail_on_unstable"])
        self.assertEqual(report_gates(merge_job),
                         ["--fail-on", "unstable", "--max-failed-rate", "0"])

        # The same audit unsharded: one pod of a Job with SHARDS=1.
        single = self.path("single")
        add_suite(single)
        done = run_container(shards_job, single, 0, SHARDS="1")
        self.assertEqual(done.returncode, 0, done.stdout[-2000:] + done.stderr[-2000:])
        self.assert_same_audit(merged, self.judged(os.path.join(single, "data", "shard-1.db"),
                                                   report_gates(merge_job)))
        for path in ci.files_under(cluster):
            with open(path, "rb") as f:
                self.assertNotIn(KEY.encode(), f.read(), path)


if __name__ == "__main__":
    h.main()
