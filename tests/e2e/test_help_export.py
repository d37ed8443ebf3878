#!/usr/bin/python3
"""Scenario: the man page and the shell completions the build generated (build/cli/help/, what
`cmake --install` and the Debian package install) are what `llmrepro help-export` prints now,
and they cover the command line as `--help` shows it: every subcommand, every long option of
each in both completions and the man page, and the fixed values of --api, --compare-on,
--profile and gpu-probe's --backend and --dtype. The bash completion is run for real: it
completes a subcommand, a prefix of options, and an option's values. The man page formats
without a groff warning. `audit --help`, the man page and docs/options.md name the same option
groups in the same order. So a flag added without a completion, or a stale file, fails here."""

import os
import re
import shutil
import subprocess

import e2e_harness as h

API_CHOICES = ["auto", "openai-chat", "openai-completions", "llamacpp", "sglang", "ollama", "tgi",
               "openai-responses", "gemini", "anthropic"]
SUBCOMMANDS = ["audit", "report", "diff", "merge", "import", "serve", "gpu-probe"]
AUDIT_GROUPS = ["Options", "Endpoint", "Plan", "Probes", "Judging and gates", "Budgets", "Outputs",
                "Engine"]
# An option line of CLI11's help: "  -h,--help   ..." or "  --api TEXT:{...}=auto ...".
OPTION_LINE = re.compile(r"^\s+(?:-\w,)?(--[a-z0-9][a-z0-9-]*)")


class HelpExport(h.E2ETestCase):
    def setUp(self):
        super().setUp()
        self.help_dir = os.path.join(os.path.dirname(h.ARGS.binary), "help")

    def generated(self, name):
        path = os.path.join(self.help_dir, name)
        self.assertTrue(os.path.isfile(path), f"the build did not generate {path}")
        with open(path, encoding="utf-8") as f:
            return f.read()

    def subcommands(self):
        """The subcommands `llmrepro --help` lists, in its order."""
        run = self.run_llmrepro(["--help"])
        self.assert_exit(run, 0)
        listed = run.stdout.split("Subcommands:", 1)[1]
        return [line.split()[0] for line in listed.splitlines() if line.strip()]

    def long_options(self, command):
        run = self.run_llmrepro([command, "--help"])
        self.assert_exit(run, 0)
        return [m.group(1) for line in run.stdout.splitlines() if (m := OPTION_LINE.match(line))]

    def complete_bash(self, *words):
        """COMPREPLY of the generated bash completion for the command line `words`, the last
        word being the one completed."""
        script = os.path.join(self.help_dir, "llmrepro.bash")
        quoted = " ".join("'" + w + "'" for w in ("llmrepro",) + words)
        program = (f"source '{script}'; COMP_WORDS=({quoted}); COMP_CWORD={len(words)}; "
                   "_llmrepro; printf '%s\\n' \"${COMPREPLY[@]}\"")
        run = subprocess.run(["bash", "--norc", "-c", program], capture_output=True, text=True,
                             timeout=30)
        self.assertEqual(run.returncode, 0, run.stderr)
        return [line for line in run.stdout.splitlines() if line]

    def test_generated_files_are_current(self):
        for name, format in (("llmrepro.1", "man"), ("llmrepro.bash", "bash"),
                             ("_llmrepro", "zsh")):
            run = self.run_llmrepro(["help-export", "--format", format])
            self.assert_exit(run, 0)
            self.assertEqual(self.generated(name), run.stdout, f"{name} is stale")

    def test_every_subcommand_and_long_option_is_covered(self):
        self.assertEqual(self.subcommands(), SUBCOMMANDS, "help-export stays hidden")
        bash, zsh, man = (self.generated(n) for n in ("llmrepro.bash", "_llmrepro", "llmrepro.1"))
        for command in SUBCOMMANDS:
            self.assertIn(f"\n    {command})\n", bash, f"bash: {command}")
            self.assertIn(f"\n        {command})\n", zsh, f"zsh: {command}")
            self.assertIn(f'.SS "llmrepro {command.replace("-", chr(92) + "-")}"', man, command)
            options = self.long_options(command)
            self.assertIn("--help", options)
            self.assertGreaterEqual(len(options), 3, command)
            for option in options:
                self.assertRegex(bash, rf"'[^'\n]*(?<![\w-]){option}(?![\w-])", f"bash: {option}")
                self.assertRegex(zsh, rf"'(\(- \*\)|\*)?{option}\[", f"zsh: {command} {option}")
                self.assertIn(option.replace("-", "\\-"), man, f"man: {command} {option}")
        audit = self.long_options("audit")
        for option in ("--api", "--compare-on", "--fail-on", "--engine-seed", "--stop-after"):
            self.assertIn(option, audit)

    def test_bash_completes_commands_options_and_values(self):
        self.assertEqual(self.complete_bash("g"), ["gpu-probe"])
        self.assertEqual(self.complete_bash("--v"), ["--version"])
        self.assertEqual(self.complete_bash("audit", "--max-tok"),
                         ["--max-tokens", "--max-tokens-total"])
        self.assertEqual(self.complete_bash("audit", "--api", ""), API_CHOICES)
        self.assertEqual(self.complete_bash("audit", "--compare-on", ""),
                         ["answer", "reasoning", "both", "tool_calls"])
        self.assertEqual(self.complete_bash("audit", "--profile", "d"), ["deterministic"])
        self.assertEqual(self.complete_bash("report", "--compare-on", "r"), ["reasoning"])
        self.assertEqual(self.complete_bash("gpu-probe", "--backend", ""), ["auto", "cuda", "cpu"])
        self.assertEqual(self.complete_bash("gpu-probe", "--dtype", "f"), ["fp16", "fp32"])
        # A value without fixed choices is left to readline's file completion.
        self.assertEqual(self.complete_bash("audit", "--suite", ""), [])

    def test_zsh_completion_names_values(self):
        zsh = self.generated("_llmrepro")
        self.assertTrue(zsh.startswith("#compdef llmrepro\n"))
        self.assertIn("'--api[", zsh)
        self.assertIn(":TEXT:(" + " ".join(API_CHOICES) + ")'", zsh)
        self.assertIn(":TEXT:(answer reasoning both tool_calls)'", zsh)
        shell = shutil.which("zsh")
        self.assertIsNotNone(shell, "zsh is missing: scripts/install-deps.sh test installs it")
        run = subprocess.run([shell, "-n", os.path.join(self.help_dir, "_llmrepro")],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual((run.returncode, run.stderr), (0, ""))

    def test_man_page_sections_and_troff(self):
        man = self.generated("llmrepro.1")
        for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXIT STATUS", "FILES",
                        "SEE ALSO"):
            self.assertIn(f"\n.SH {section}\n", man)
        for code in (0, 1, 2, 3, 70, 130):
            self.assertIn(f"\n.TP\n.B {code}\n", man)
        # Every line that starts with a control character is one of the macros written on purpose.
        for line in man.splitlines():
            if line[:1] in (".", "'"):
                self.assertRegex(line, r"^\.(TH|SH|SS|TP|B|I|PP|br|\\\") ?", line)
        groff = shutil.which("groff")
        self.assertIsNotNone(groff, "groff is missing: scripts/install-deps.sh test installs it")
        run = subprocess.run([groff, "-man", "-Tutf8", "-ww", "-z",
                              os.path.join(self.help_dir, "llmrepro.1")],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual((run.returncode, run.stderr), (0, ""))

    def test_audit_groups_agree(self):
        run = self.run_llmrepro(["audit", "--help"])
        self.assert_exit(run, 0)
        self.assertEqual(re.findall(r"^(\w[\w ]*):$", run.stdout, re.M), AUDIT_GROUPS)
        man = self.generated("llmrepro.1")
        audit = man.split('.SS "llmrepro audit"', 1)[1].split(".SS ", 1)[0]
        self.assertEqual(re.findall(r"^\.PP\n\\fI(.*)\\fR$", audit, re.M), AUDIT_GROUPS)
        with open(os.path.join(h.ARGS.source_dir, "docs", "options.md"), encoding="utf-8") as f:
            reference = f.read()
        audit = reference.split("## `llmrepro audit`", 1)[1].split("\n## ", 1)[0]
        self.assertEqual([re.sub(r" \(config table .*\)$", "", g)
                          for g in re.findall(r"^### (.*)$", audit, re.M)], AUDIT_GROUPS)

    def test_bad_format_is_a_usage_error(self):
        run = self.run_llmrepro(["help-export", "--format", "pdf"])
        self.assert_exit(run, 2)
        self.assertIn("--format", run.stderr)


if __name__ == "__main__":
    h.main()
