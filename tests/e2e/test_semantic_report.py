#!/usr/bin/python3
"""Scenario: semantic agreement in every report. The scripted endpoint answers "alpha" with two
alternating completions and "beta" with one; `llmrepro serve` embeds them (--embeddings). The
JSON report's `semantic` holds, per prompt, 2 distinct completions and 1 pair for alpha (mean =
min = the cosine of the two texts' embeddings, computed here from the same server; std 0) and 1
distinct, 0 pairs, similarity 1 for beta; the share agreeing follows from the threshold. The
terminal, HTML and Markdown reports show it, and `llmrepro report` on the database reproduces
the JSON's `semantic` exactly and prints the same terminal line."""

import time

import e2e_harness as h

TEXT_X = " The rain falls on the old city"
TEXT_Y = " A cold wind comes from the north"
THRESHOLD = 0.999


def tokens(text):
    return [[w, -0.1, [[w, -0.1], [" zz", -3.0]]] for w in
            [" " + word for word in text.split()]]


class SemanticReport(h.E2ETestCase):
    def test_semantic_agreement_in_every_report(self):
        port = h.free_port()
        self.start_llmrepro(["serve", "--port", str(port)])
        serve = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                h.post_json(serve + "/v1/embeddings", {"input": ["the weather"]})
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.fail("llmrepro serve did not answer within 20 s")
                time.sleep(0.1)
        x, y = {"tokens": tokens(TEXT_X)}, {"tokens": tokens(TEXT_Y)}
        endpoint = self.start_endpoint({"prompts": {"Alpha question?": [x, y],
                                                    "Beta question?": [x]}})
        suite = self.write_suite("suite.jsonl", [{"id": "alpha", "prompt": "Alpha question?"},
                                                 {"id": "beta", "prompt": "Beta question?"}])
        db, json_path = self.path("audit.db"), self.path("audit.json")
        html_path, md_path = self.path("audit.html"), self.path("audit.md")
        run = self.run_llmrepro(["audit", "--suite", suite, "--endpoint", endpoint.url,
                                 "--api", "openai-chat", "--runs", "2", "--concurrency", "1",
                                 "--max-tokens", "16", "--db", db, "--json", json_path,
                                 "--html", html_path, "--markdown", md_path,
                                 "--embeddings", serve, "--embeddings-model", "llmrepro-tiny",
                                 "--semantic-threshold", str(THRESHOLD)], timeout=120)
        self.assert_exit(run, 0)
        report = self.load_report(json_path)

        texts = {c["text"] for c in report["prompts"][0]["completions"]}
        self.assertEqual(texts, {TEXT_X, TEXT_Y})
        embedded = h.post_json(serve + "/v1/embeddings",
                             {"input": [TEXT_X, TEXT_Y], "model": "llmrepro-tiny"})["data"]
        similarity = h.cosine(embedded[0]["embedding"], embedded[1]["embedding"])
        self.assertLess(similarity, 1.0)
        alpha_agrees = similarity >= THRESHOLD
        semantic = report["semantic"]
        self.assertEqual((semantic["model"], semantic["threshold"]), ("llmrepro-tiny", THRESHOLD))
        self.assertEqual(semantic["agreeing_share"], (1 + int(alpha_agrees)) / 2)
        alpha, beta = semantic["prompts"]
        self.assertEqual((alpha["id"], alpha["distinct"], alpha["pairs"], alpha["std"],
                          alpha["agrees"]), ("alpha", 2, 1, 0.0, alpha_agrees))
        self.assertEqual(alpha["mean"], alpha["min"])
        self.assertAlmostEqual(alpha["mean"], similarity, places=9)
        self.assertEqual(beta, {"id": "beta", "distinct": 1, "pairs": 0, "mean": 1.0, "std": 0.0,
                                "min": 1.0, "agrees": True})

        share = f"{100.0 * semantic['agreeing_share']:.1f}%"
        line = f"semantic agreement: {share} of 2 prompts have every pair of distinct completions"
        self.assertIn(line, run.stdout)
        with open(html_path, encoding="utf-8") as f:
            html = f.read()
        self.assertIn('<section class="panel" id="semantic"><h2>Semantic agreement</h2>', html)
        self.assertIn(f"<b>{share}</b> of 2 prompts have every pair at or above {THRESHOLD:g}.",
                      html)
        self.assertIn(f'<tr><td><code>alpha</code></td><td class="num">2</td><td class="num">1</td>'
                      f'<td class="num">{alpha["mean"]:.4f}</td>', html)
        with open(md_path, encoding="utf-8") as f:
            md = f.read()
        self.assertIn(f"\n### Semantic agreement\n\n{share} of 2 prompts have every pair of "
                      f"distinct completions at cosine \u2265 {THRESHOLD:g} (embedding model "
                      f"llmrepro-tiny).\n", md)

        again_path = self.path("again.json")
        again = self.run_llmrepro(["report", "--db", db, "--json", again_path])
        self.assert_exit(again, 0)
        self.assertEqual(self.load_report(again_path)["semantic"], semantic)
        self.assertIn(line, again.stdout)


if __name__ == "__main__":
    h.main()
