"""Scenario: scripts/check-doc-links.sh on a scratch tree: Markdown anchors must name a heading
of the file they link (as GitHub writes anchors), and README.md stays a front page of at most 250
lines (the manual lives under docs/).
"""

import os
import shutil
import subprocess
import tempfile
import unittest

import e2e_harness

HEADINGS = """# The manual page

## Checking a claim: `--profile deterministic`

## Notes

## Notes

```sh
# not a heading: inside a code block
```

## What the verdict means
"""


class DocLinks(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="llmrepro-doc-links-")
        self.addCleanup(shutil.rmtree, self.root, True)
        os.makedirs(os.path.join(self.root, "scripts"))
        os.makedirs(os.path.join(self.root, "docs"))
        shutil.copy(os.path.join(e2e_harness.ARGS.source_dir, "scripts", "check-doc-links.sh"),
                    os.path.join(self.root, "scripts"))
        self.write("docs/manual.md", HEADINGS + "\nBack to [the top](#the-manual-page).\n")
        # The index the script's own comment names.
        self.write("docs/README.md", "# The manual\n\n[The manual page](manual.md#notes).\n")

    def write(self, path, text):
        with open(os.path.join(self.root, path), "w", encoding="utf-8") as file:
            file.write(text)

    def readme(self, lines, link="docs/manual.md#what-the-verdict-means"):
        body = [f"see [the verdict]({link})"] + ["text"] * (lines - 1)
        self.write("README.md", "\n".join(body) + "\n")

    def check(self):
        # Outside a git work tree the script walks the folder itself.
        run = subprocess.run(["bash", os.path.join(self.root, "scripts", "check-doc-links.sh")],
                             capture_output=True, text=True, timeout=60,
                             env={**os.environ,
                                  "GIT_CEILING_DIRECTORIES": os.path.dirname(self.root)})
        return run.returncode, run.stdout + run.stderr

    def test_a_tree_whose_links_and_readme_hold_passes(self):
        self.readme(250)
        code, out = self.check()
        self.assertEqual((code, out.strip()), (0, "doc-links: ok"))

    def test_a_readme_over_250_lines_fails(self):
        self.readme(251)
        code, out = self.check()
        self.assertEqual(code, 1, out)
        self.assertIn("doc-links: README.md has 251 lines, more than 250: the README is the front "
                      "page", out)

    def test_anchors_follow_githubs_rules(self):
        good = ["checking-a-claim---profile-deterministic", "notes", "notes-1",
                "what-the-verdict-means", "the-manual-page"]
        for anchor in good:
            with self.subTest(anchor=anchor):
                self.readme(3, f"docs/manual.md#{anchor}")
                self.assertEqual(self.check(), (0, "doc-links: ok\n"))
        for anchor in ["notes-2", "not-a-heading-inside-a-code-block", "verdict"]:
            with self.subTest(anchor=anchor):
                self.readme(3, f"docs/manual.md#{anchor}")
                code, out = self.check()
                self.assertEqual(code, 1, out)
                self.assertIn(f"doc-links: README.md:1 links docs/manual.md#{anchor}, but "
                              f"docs/manual.md has no heading with the anchor #{anchor}", out)

    def test_an_anchor_into_the_same_file_is_checked(self):
        self.readme(3)
        self.write("docs/other.md", "# Other\n\nSee [above](#other) and [below](#gone).\n")
        code, out = self.check()
        self.assertEqual(code, 1, out)
        self.assertEqual(out.strip(), "doc-links: docs/other.md:3 links #gone, but docs/other.md "
                                      "has no heading with the anchor #gone")


if __name__ == "__main__":
    e2e_harness.main()
