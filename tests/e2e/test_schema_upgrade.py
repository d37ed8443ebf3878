#!/usr/bin/python3
"""Scenario: a database of schema version 1 (a row per token, as builds before the packed tokens
wrote it) or 2 (token blob version 1, every completion text stored), made here from a current one
by token_blob.downgrade_to_version_1 and _2, is upgraded in place by whichever command opens it
(`report`, `diff`, `audit --resume`), which says so on stderr in one line naming the file and the
number of token rows packed or tokens repacked, and reports exactly what the audit reported
before, every byte of its JSON but the file names. Opened again, it is not upgraded twice."""

import os
import shutil

import e2e_harness as h
import standard_audit as std
import token_blob


class SchemaUpgrade(h.E2ETestCase):
    def setUp(self):
        super().setUp()
        self.endpoint = self.start_endpoint(std.script())
        self.suite = self.write_suite("suite.jsonl", std.suite())

    def audit(self, name):
        """A complete standard audit into NAME.db; returns its JSON report."""
        report_path = self.path(f"{name}.json")
        run = self.run_llmrepro(std.audit_args(self.suite, self.endpoint.url, "openai-chat",
                                               self.path(f"{name}.db"), report_path, False))
        self.assert_exit(run, 0)
        self.assertNotIn("schema version", run.stderr)
        return self.load_report(report_path)

    def older_copy(self, name, copy, version=1):
        """COPY.db: NAME.db rewritten as schema version 1 or 2; returns its token row count
        (version 1) or token count (version 2)."""
        shutil.copy(self.path(f"{name}.db"), self.path(f"{copy}.db"))
        for suffix in ("-wal", "-shm"):
            if os.path.exists(self.path(f"{name}.db{suffix}")):
                shutil.copy(self.path(f"{name}.db{suffix}"), self.path(f"{copy}.db{suffix}"))
        if version == 1:
            return token_blob.downgrade_to_version_1(self.path(f"{copy}.db"))
        return token_blob.downgrade_to_version_2(self.path(f"{copy}.db"))

    def version_1_copy(self, name, copy):
        return self.older_copy(name, copy)

    def upgrade_line(self, copy, rows, version=1):
        what = "token rows packed" if version == 1 else "tokens repacked"
        return (f"llmrepro: upgraded audit database '{self.path(copy + '.db')}' in place from "
                f"schema version {version} to 3 ({rows} {what})\n")

    def report_text(self, name):
        """The JSON report NAME.json as text, its database's name replaced."""
        with open(self.path(f"{name}.json"), encoding="utf-8") as f:
            return f.read().replace(self.path(f"{name}.db"), "DB")

    def schema_version(self, copy):
        with h.open_db(self.path(f"{copy}.db")) as db:
            return db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]

    def test_report_upgrades_in_place_and_reports_the_same(self):
        first = self.audit("first")
        with h.open_db(self.path("first.db")) as db:
            answer_tokens = token_blob.token_count(db)
        # 15 requests a prompt (5 runs x 3 levels), each scripted list served 3 times over: the
        # version 1 rows are every token of every record.
        requests = std.RUNS * len(std.LEVELS)
        self.assertEqual(requests, 15)
        want_rows = (15 * (len(std.CAPITAL) + len(std.HELLO))
                     + 3 * (4 * len(std.FEYNMAN_X) + len(std.FEYNMAN_Y))
                     + 3 * (3 * len(std.PRIMES_P) + 2 * len(std.PRIMES_Q)))
        rows = self.version_1_copy("first", "old")
        self.assertEqual(rows, answer_tokens)
        self.assertEqual(rows, want_rows)
        self.assertEqual(self.schema_version("old"), "1")

        run = self.run_llmrepro(["report", "--db", self.path("old.db"), "--json",
                                 self.path("old.json"), "--quiet"])
        self.assert_exit(run, 0)
        self.assertEqual(run.stderr, self.upgrade_line("old", rows))
        self.assertEqual(self.schema_version("old"), "3")
        again = self.load_report(self.path("old.json"))
        self.assertEqual(again["summary"], first["summary"])
        self.assertEqual(again["prompts"], first["prompts"])
        with h.open_db(self.path("old.db")) as db:
            self.assertEqual(token_blob.token_count(db), answer_tokens)
            self.assertEqual(db.execute("SELECT count(*) FROM sqlite_master WHERE name IN "
                                        "('tokens', 'reasoning_tokens')").fetchone()[0], 0)

        run = self.run_llmrepro(["report", "--db", self.path("old.db"), "--quiet"])
        self.assert_exit(run, 0)
        self.assertEqual(run.stderr, "")

    def test_version_2_upgrades_in_place_and_reports_the_same_json(self):
        self.audit("first")
        self.assert_exit(self.run_llmrepro(["report", "--db", self.path("first.db"), "--json",
                                            self.path("first.json"), "--quiet"]), 0)
        with h.open_db(self.path("first.db")) as db:
            tokens = token_blob.token_count(db) + token_blob.token_count(db, "reasoning")
            texts = token_blob.request_texts(db)
            stored_null = db.execute("SELECT count(*) FROM requests WHERE text IS NULL"
                                     ).fetchone()[0]
        # Every successful request's text is its tokens' texts here: stored as NULL.
        self.assertEqual(stored_null, len(texts))
        self.assertEqual(self.older_copy("first", "old", 2), tokens)
        self.assertEqual(self.schema_version("old"), "2")
        with h.open_db(self.path("old.db")) as db:
            self.assertEqual(token_blob.request_texts(db), texts)
            self.assertEqual(db.execute("SELECT count(*) FROM requests WHERE text IS NULL"
                                        ).fetchone()[0], 0)
            self.assertEqual({blob[0] for (blob,) in db.execute(
                "SELECT answer FROM packed_tokens")}, {1})

        run = self.run_llmrepro(["report", "--db", self.path("old.db"), "--json",
                                 self.path("old.json"), "--quiet"])
        self.assert_exit(run, 0)
        self.assertEqual(run.stderr, self.upgrade_line("old", tokens, 2))
        self.assertEqual(self.schema_version("old"), "3")
        self.assertEqual(self.report_text("old"), self.report_text("first"))
        with h.open_db(self.path("old.db")) as db:
            self.assertEqual(token_blob.request_texts(db), texts)
            self.assertEqual(db.execute("SELECT count(*) FROM requests WHERE text IS NULL"
                                        ).fetchone()[0], stored_null)
            self.assertEqual({blob[0] for (blob,) in db.execute(
                "SELECT answer FROM packed_tokens")}, {2})
        run = self.run_llmrepro(["report", "--db", self.path("old.db"), "--quiet"])
        self.assert_exit(run, 0)
        self.assertEqual(run.stderr, "")

    def test_diff_and_resume_upgrade_each_file(self):
        self.audit("first")
        rows = self.version_1_copy("first", "a")
        self.assertEqual(self.version_1_copy("first", "b"), rows)
        run = self.run_llmrepro(["diff", self.path("a.db"), self.path("b.db"), "--quiet"])
        self.assert_exit(run, 0)
        self.assertEqual(run.stderr, self.upgrade_line("a", rows) + self.upgrade_line("b", rows))

        self.version_1_copy("first", "c")
        args = std.audit_args(self.suite, self.endpoint.url, "openai-chat", self.path("c.db"),
                              self.path("c.json"), False)
        run = self.run_llmrepro(args + ["--resume"])
        self.assert_exit(run, 0)
        # The line comes first, before the run's own progress lines, and once.
        self.assertEqual(run.stderr.splitlines(keepends=True)[0], self.upgrade_line("c", rows))
        self.assertEqual(run.stderr.count("schema version"), 1)
        self.assertEqual(self.schema_version("c"), "3")
        resumed = self.load_report(self.path("c.json"))
        self.assertEqual(resumed["summary"]["unstable_prompts"], 2)


if __name__ == "__main__":
    h.main()
