#!/usr/bin/python3
"""The Debian package and `cmake --install`, checked as a user would meet them.

Builds the package target of a configured build, then:
- its Depends name runtime libraries (libcurl, SQLite, fmt, toml++, libstdc++), never a -dev
  package;
- it holds exactly llmrepro, the CUDA helper where the build has one, the JSON Schemas, the
  bash and zsh completions and the gzipped man page, each non-empty, the man page and the
  completions naming every subcommand;
- unpacked into a scratch root (no root needed), its llmrepro prints the version and audits the
  embedded reference engine (2 prompts x 2 runs), and the JSON report validates against the
  installed schema;
- `cmake --install --prefix <scratch>` installs the same files;
- as root with LLMREPRO_TEST_DPKG=1 it also installs with dpkg -i, runs, and is removed.

    test_package.py --build-dir build --source-dir . --version 0.1.0 --cmake cmake
"""

import argparse
import glob
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ARGS = argparse.Namespace()
SUBCOMMANDS = ["audit", "report", "diff", "merge", "serve", "gpu-probe"]
SCHEMAS = ["llmrepro.audit.v1.schema.json", "llmrepro.diff.v1.schema.json",
           "llmrepro.gpu-probe.v1.schema.json", "llmrepro.replay.v1.schema.json"]
RUNTIME_LIBRARIES = ["libcurl4", "libsqlite3-0", "libfmt9", "libtomlplusplus3", "libstdc++6", "libc6"]
SUITE = ('{"id": "p1", "prompt": "The weather in the valley", "max_tokens": 8}\n'
         '{"id": "p2", "prompt": "In the morning the sky is", "max_tokens": 8}\n')


def run(args, timeout=120, **kwargs):
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kwargs)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(args)}: exit {done.returncode}\n{done.stdout[-3000:]}\n"
                             f"{done.stderr[-3000:]}")
    return done.stdout


def files_under(root):
    """Every file under `root`, as paths relative to it."""
    found = set()
    for folder, _, names in os.walk(root):
        for name in names:
            found.add(os.path.relpath(os.path.join(folder, name), root))
    return found


class Package(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        for tool in ("dpkg-deb", "dpkg-shlibdeps"):
            if shutil.which(tool) is None:
                raise AssertionError(f"{tool} is missing: scripts/install-deps.sh test installs it")
        cls.tmp = tempfile.mkdtemp(prefix="llmrepro-package-")
        package_dir = os.path.join(ARGS.build_dir, "package")
        for old in glob.glob(os.path.join(package_dir, "*.deb")):
            os.remove(old)
        run([ARGS.cmake, "--build", ARGS.build_dir, "--target", "package"], timeout=240)
        debs = glob.glob(os.path.join(package_dir, "*.deb"))
        if len(debs) != 1:
            raise AssertionError(f"the package target wrote {debs}, not one .deb")
        cls.deb = debs[0]
        cls.root = os.path.join(cls.tmp, "root")
        run(["dpkg-deb", "-x", cls.deb, cls.root])
        built = os.path.join(ARGS.build_dir, "cli", "llmrepro")
        cls.has_cuda = "CUDA backend: compiled" in run([built, "--version"])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, True)

    def expected_files(self, prefix):
        """What an installation under `prefix` holds, as paths relative to the root."""
        files = ["bin/llmrepro", "share/man/man1/llmrepro.1.gz",
                 "share/bash-completion/completions/llmrepro",
                 "share/zsh/vendor-completions/_llmrepro"]
        files += [f"share/llmrepro/schemas/{schema}" for schema in SCHEMAS]
        if self.has_cuda:
            files.append("bin/llmrepro-gpu-cuda")
        return {os.path.normpath(os.path.join(prefix, path)) for path in files}

    def test_control_fields(self):
        self.assertEqual(os.path.basename(self.deb).split("_")[:2], ["llmrepro", ARGS.version])
        fields = {name: run(["dpkg-deb", "-f", self.deb, name]).strip()
                  for name in ("Package", "Version", "Maintainer", "Depends")}
        self.assertEqual(fields["Package"], "llmrepro")
        self.assertEqual(fields["Version"], ARGS.version)
        self.assertEqual(fields["Maintainer"], "llmrepro project")
        depends = [d.strip().split(" ")[0] for d in fields["Depends"].split(",")]
        self.assertEqual([d for d in depends if d.endswith("-dev")], [], fields["Depends"])
        for library in RUNTIME_LIBRARIES:
            self.assertIn(library, depends, fields["Depends"])

    def test_files_and_contents(self):
        self.assertEqual(files_under(self.root), self.expected_files("usr"))
        for path in self.expected_files("usr"):
            self.assertGreater(os.path.getsize(os.path.join(self.root, path)), 0, path)
        with gzip.open(os.path.join(self.root, "usr/share/man/man1/llmrepro.1.gz"), "rt",
                       encoding="utf-8") as f:
            man = f.read()
        with open(os.path.join(self.root, "usr/share/bash-completion/completions/llmrepro"),
                  encoding="utf-8") as f:
            bash = f.read()
        with open(os.path.join(self.root, "usr/share/zsh/vendor-completions/_llmrepro"),
                  encoding="utf-8") as f:
            zsh = f.read()
        self.assertTrue(man.startswith('.\\" Generated by'), man[:200])
        for command in SUBCOMMANDS:
            self.assertIn(f'.SS "llmrepro {command.replace("-", chr(92) + "-")}"', man)
            self.assertIn(f"\n    {command})\n", bash)
            self.assertIn(f"\n        {command})\n", zsh)
        for schema in SCHEMAS:
            with open(os.path.join(ARGS.source_dir, "schemas", schema), "rb") as f:
                source = f.read()
            with open(os.path.join(self.root, "usr/share/llmrepro/schemas", schema), "rb") as f:
                self.assertEqual(f.read(), source, schema)

    def test_installed_binary_runs_an_audit(self):
        binary = os.path.join(self.root, "usr/bin/llmrepro")
        version = run([binary, "--version"])
        self.assertTrue(version.startswith(f"llmrepro {ARGS.version}\n"), version)
        # Stripped: the package carries no debug information.
        self.assertNotIn(".debug_info", run(["objdump", "-h", binary]))
        suite = os.path.join(self.tmp, "suite.jsonl")
        with open(suite, "w", encoding="utf-8") as f:
            f.write(SUITE)
        report_path = os.path.join(self.tmp, "audit.json")
        run([binary, "audit", "--suite", suite, "--runs", "2", "--concurrency", "1", "--db",
             os.path.join(self.tmp, "audit.db"), "--json", report_path, "--quiet"], timeout=60)
        with open(report_path, encoding="utf-8") as f:
            report = json.load(f)
        summary = report["summary"]
        self.assertEqual((summary["prompts"], summary["requests"], summary["failed_requests"]),
                         (2, 4, 0))
        # Serially the reference engine repeats itself exactly.
        self.assertEqual(summary["stable_prompts"], 2)
        import jsonschema
        with open(os.path.join(self.root, "usr/share/llmrepro/schemas", SCHEMAS[0]),
                  encoding="utf-8") as f:
            jsonschema.validate(report, json.load(f))

    def test_cmake_install_installs_the_same_files(self):
        prefix = os.path.join(self.tmp, "prefix")
        run([ARGS.cmake, "--install", ARGS.build_dir, "--prefix", prefix])
        self.assertEqual(files_under(prefix), self.expected_files("."))
        self.assertTrue(run([os.path.join(prefix, "bin/llmrepro"), "--version"])
                        .startswith(f"llmrepro {ARGS.version}\n"))

    @unittest.skipUnless(os.geteuid() == 0 and os.environ.get("LLMREPRO_TEST_DPKG") == "1",
                         "dpkg -i only as root with LLMREPRO_TEST_DPKG=1")
    def test_dpkg_install_and_remove(self):
        run(["dpkg", "-i", self.deb])
        try:
            self.assertTrue(run(["/usr/bin/llmrepro", "--version"])
                            .startswith(f"llmrepro {ARGS.version}\n"))
            self.assertIn("/usr/share/man/man1/llmrepro.1.gz", run(["dpkg", "-L", "llmrepro"]))
        finally:
            run(["dpkg", "-r", "llmrepro"])
        self.assertFalse(os.path.exists("/usr/bin/llmrepro"))


def main():
    parser = argparse.ArgumentParser(add_help=False)
    for name in ("--build-dir", "--source-dir", "--version", "--cmake"):
        parser.add_argument(name, required=True)
    known, rest = parser.parse_known_args()
    ARGS.build_dir = os.path.abspath(known.build_dir)
    ARGS.source_dir = os.path.abspath(known.source_dir)
    ARGS.version, ARGS.cmake = known.version, known.cmake
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
