#!/usr/bin/python3
"""Scenario: no output ever replaces an input, one writer per database, records checked against
the plan. Against the scripted endpoint: a report path naming the database (directly, through a
symbolic link, as ./a.db, or its -wal) is refused with exit 2 before anything is sent or written,
and the database stays byte-identical; a report in a missing directory fails before the first
request; a character device and a FIFO are written in place and stay what they are; a symbolic
link planted where the old temporary was is never written through; a report path that is a
symbolic link replaces the file it names; a second writer of a database (--resume, --overwrite)
exits 2 naming the holder while the first audit ends complete; a record edited out of the plan makes the database corrupt (exit 2)."""

import hashlib
import json
import os
import stat
import subprocess
import time

import e2e_harness as h
import standard_audit as std

RUNS = 2
PLANNED = len(std.PROMPTS) * RUNS  # level 1 only: 8


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def slow_script(delay_ms):
    tokens = {text: std.CAPITAL for _, text, _ in std.PROMPTS}
    return {"model": std.MODEL,
            "prompts": {text: [dict(std.variant(t), delay_ms=delay_ms)]
                        for text, t in tokens.items()}}


class Files(h.E2ETestCase):
    def setUp(self):
        super().setUp()
        self.suite = self.write_suite("suite.jsonl", std.suite())

    def audit_args(self, endpoint, db, *extra, runs=RUNS):
        return ["audit", "--suite", self.suite, "--endpoint", endpoint.url, "--api",
                "openai-chat", "--model", std.MODEL, "--runs", str(runs), "--concurrency", "1",
                "--seed", str(std.SEED), "--db", db, *extra]

    def audited_db(self, name="a.db"):
        """A complete audit database of PLANNED records, and the endpoint that answered it."""
        endpoint = self.start_endpoint(std.script())
        db = self.path(name)
        run = self.run_llmrepro(self.audit_args(endpoint, db, "--quiet"))
        self.assertIn(run.returncode, (0, 1), run.describe())
        self.assertEqual(h.recorded_rows(db), PLANNED)
        return endpoint, db

    def assert_refused(self, run, message):
        self.assert_exit(run, 2)
        self.assertIn(message, run.stderr)

    def test_report_never_replaces_its_database(self):
        _, db = self.audited_db()
        before = digest(db)
        os.symlink(db, self.path("link.json"))
        cases = [
            (["--json", db], f"--json '{db}' is the audit database --db '{db}'"),
            (["--html", "./a.db"], f"--html './a.db' is the audit database --db '{db}'"),
            (["--markdown", self.path("link.json")],
             f"--markdown '{self.path('link.json')}' is the audit database --db '{db}'"),
            (["--junit", db + "-wal"],
             f"--junit '{db}-wal' is the -wal file of the audit database --db '{db}'"),
            (["--json", self.path("r.json"), "--html", "r.json"],
             "--html 'r.json' is also the output of --json"),
        ]
        for extra, message in cases:
            with self.subTest(extra=extra):
                run = self.run_llmrepro(["report", "--db", db, *extra])
                self.assert_refused(run, message)
                self.assertEqual(digest(db), before, "the database is byte-identical")
                self.assertFalse(os.path.exists(self.path("r.json")))
        self.assertTrue(os.path.islink(self.path("link.json")))
        run = self.run_llmrepro(["report", "--db", db, "--json", self.path("ok.json"), "--quiet"])
        self.assertIn(run.returncode, (0, 1), run.describe())
        self.assertEqual(self.load_report(self.path("ok.json"))["audit"]["recorded_requests"],
                         PLANNED)

    def test_audit_refuses_before_any_request(self):
        endpoint = self.start_endpoint(std.script())
        db = self.path("a.db")
        suite_copy = self.suite
        cases = [
            (["--html", db], f"--html '{db}' is the audit database --db '{db}'"),
            (["--json", suite_copy], f"--json '{suite_copy}' is the file named by --suite '{suite_copy}'"),
            (["--json", self.path("missing/r.json")],
             f"--json '{self.path('missing/r.json')}' is in a directory that does not exist "
             f"('{self.path('missing')}')"),
            (["--json", self.tmp], f"--json '{self.tmp}' is a directory"),
        ]

        for extra, message in cases:
            with self.subTest(extra=extra):
                run = self.run_llmrepro(self.audit_args(endpoint, db, *extra))
                self.assert_refused(run, message)
                self.assertEqual(endpoint.requests(), [], "nothing reached the endpoint")
                self.assertFalse(os.path.exists(db), "no database was created")
        gone = self.path("gone/a.db")
        run = self.run_llmrepro(self.audit_args(endpoint, gone))
        self.assert_refused(run, f"--db '{gone}' is in a directory that does not exist")
        self.assertEqual(endpoint.requests(), [], "nothing reached the endpoint")

    def test_devices_links_and_standard_output(self):
        _, db = self.audited_db()
        # A character device is written in place: it stays a device. A private null device
        # (root only), never the system's /dev/null, which a build without the fix replaced.
        device = self.path("null")
        try:
            os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        except PermissionError:
            device = None
        if device:
            run = self.run_llmrepro(["report", "--db", db, "--json", device, "--quiet"])
            self.assertIn(run.returncode, (0, 1), run.describe())
            self.assertTrue(stat.S_ISCHR(os.lstat(device).st_mode), "still a character device")
        # A FIFO too: written in place, read whole by its reader.
        fifo = self.path("pipe")
        os.mkfifo(fifo)
        reader = subprocess.Popen(["cat", fifo], stdout=subprocess.PIPE)
        self.processes.append(reader)
        run = self.run_llmrepro(["report", "--db", db, "--json", fifo, "--quiet"])
        self.assertIn(run.returncode, (0, 1), run.describe())
        piped, _ = reader.communicate(timeout=30)
        self.assertEqual(json.loads(piped)["audit"]["recorded_requests"], PLANNED)
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode), "still a FIFO")
        # "-" is standard output: the JSON alone, the summary on stderr.
        run = self.run_llmrepro(["report", "--db", db, "--json", "-"])
        self.assertIn(run.returncode, (0, 1), run.describe())
        self.assertEqual(json.loads(run.stdout)["audit"]["recorded_requests"], PLANNED)
        self.assertFalse(os.path.exists(self.path("-")))
        # A symbolic link planted where a predictable temporary would go is never written.
        victim = self.path("victim.txt")
        with open(victim, "w", encoding="utf-8") as f:
            f.write("keep me\n")
        report = self.path("report.json")
        os.symlink(victim, report + ".tmp")
        run = self.run_llmrepro(["report", "--db", db, "--json", report, "--quiet"])
        self.assertIn(run.returncode, (0, 1), run.describe())
        with open(victim, encoding="utf-8") as f:
            self.assertEqual(f.read(), "keep me\n")
        self.assertFalse(os.path.islink(report))
        self.assertEqual(self.load_report(report)["audit"]["recorded_requests"], PLANNED)
        self.assertEqual([n for n in os.listdir(self.tmp)
                          if n.endswith(".tmp") and n != "report.json.tmp"], [],
                         "no temporary is left behind")
        # A report path that is a link: the file it names is replaced, the link stays.
        target = self.path("target.json")
        with open(target, "w", encoding="utf-8") as f:
            f.write("old\n")
        os.chmod(target, 0o640)
        os.symlink(target, self.path("via.json"))
        run = self.run_llmrepro(["report", "--db", db, "--json", self.path("via.json"), "--quiet"])
        self.assertIn(run.returncode, (0, 1), run.describe())
        self.assertTrue(os.path.islink(self.path("via.json")))
        self.assertEqual(self.load_report(target)["audit"]["recorded_requests"], PLANNED)
        self.assertEqual(stat.S_IMODE(os.stat(target).st_mode), 0o640)
        # A link to nothing is refused, and nothing is created through it.
        os.symlink(self.path("nowhere.json"), self.path("dangling.json"))
        run = self.run_llmrepro(["report", "--db", db, "--json", self.path("dangling.json")])
        self.assert_refused(run, "is a symbolic link to a missing file")
        self.assertFalse(os.path.exists(self.path("nowhere.json")))

    def test_one_writer_per_database(self):
        # Slow enough (24 requests x 300 ms) that the refused writers run while it does, even
        # under a sanitizer.
        endpoint = self.start_endpoint(slow_script(300))
        db = self.path("a.db")
        args = self.audit_args(endpoint, db, "--json", self.path("first.json"), runs=6)
        planned = len(std.PROMPTS) * 6
        first = self.start_llmrepro(args)
        deadline = time.monotonic() + 30
        while h.recorded_rows(db) < 2:
            self.assertIsNone(first.poll(), "the first audit ended too soon")
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
        holder = f"'{db}' is being written by pid {first.pid} (llmrepro audit); wait for it or " \
                 "choose another --db"
        for extra in (["--resume"], ["--overwrite"]):
            with self.subTest(extra=extra):
                run = self.run_llmrepro(self.audit_args(endpoint, db, *extra, runs=6))
                self.assert_refused(run, holder)
        self.assertIsNone(first.poll(), "the first audit still runs")
        first.wait(timeout=60)
        self.assertEqual(first.returncode, 0, first.stderr.read())
        report = self.load_report(self.path("first.json"))
        self.assertEqual(report["audit"]["status"], "complete")
        self.assertEqual(report["audit"]["recorded_requests"], planned)
        self.assertEqual(len(endpoint.posts()), planned, "every request sent once")
        # Once the holder has gone, --overwrite takes the file with its -wal and -shm.
        run = self.run_llmrepro(self.audit_args(endpoint, db, "--overwrite", "--quiet"))
        self.assertIn(run.returncode, (0, 1), run.describe())
        self.assertEqual(h.recorded_rows(db), PLANNED)

    def test_merge_and_diff_outputs(self):
        _, db = self.audited_db()
        before = digest(db)
        run = self.run_llmrepro(["diff", db, db, "--markdown", db])
        self.assert_refused(run, f"--markdown '{db}' is the audit database A '{db}'")
        run = self.run_llmrepro(["diff", db, db, "--json", "-"])
        self.assert_exit(run, 0)
        self.assertEqual(json.loads(run.stdout)["schema"], "llmrepro.diff.v1")
        run = self.run_llmrepro(["merge", db, db])
        self.assert_refused(run, f"the output '{db}' is the audit database input '{db}'")
        run = self.run_llmrepro(["merge", self.path("m.db"), db, "--json", db])
        self.assert_refused(run, f"--json '{db}' is the audit database input '{db}'")
        self.assertEqual(digest(db), before)
        self.assertFalse(os.path.exists(self.path("m.db")))

    def test_records_outside_the_plan_make_the_database_corrupt(self):
        endpoint, db = self.audited_db()
        posts = len(endpoint.posts())
        edits = [
            ("UPDATE requests SET repeat = 7 WHERE id = (SELECT MIN(id) FROM requests)",
             "repeat 7"),
            ("UPDATE requests SET concurrency = 3 WHERE id = (SELECT MIN(id) FROM requests)",
             "concurrency 3"),
            ("UPDATE requests SET endpoint_index = 1 WHERE id = (SELECT MIN(id) FROM requests)",
             "endpoint 1"),
        ]
        for sql, field in edits:
            with self.subTest(sql=sql):
                edited = self.path("edited.db")
                conn = h.sqlite3.connect(db)
                conn.execute(f"VACUUM INTO '{edited}'")
                conn.close()
                conn = h.sqlite3.connect(edited)
                conn.execute(sql)
                conn.commit()
                conn.close()
                run = self.run_llmrepro(["report", "--db", edited, "--json",
                                         self.path("edited.json")])
                self.assert_refused(run, f"audit database '{edited}': is corrupt: it holds a "
                                         "record outside its plan (")
                self.assertIn(field, run.stderr)
                self.assertFalse(os.path.exists(self.path("edited.json")))
                run = self.run_llmrepro(self.audit_args(endpoint, edited, "--resume"))
                self.assert_refused(run, "is corrupt: it holds a record outside its plan")
                self.assertEqual(len(endpoint.posts()), posts, "the resume sent nothing")
                os.remove(edited)


if __name__ == "__main__":
    h.main()
