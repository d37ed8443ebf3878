#!/usr/bin/env bash
# Fails when a comment or a document names a Markdown file that does not exist, so that a clone
# can follow every reference it reads. Scanned: the comments of C++, CUDA, Python, shell, CMake
# and YAML files, the descriptions of JSON files, and Markdown outside fenced code blocks (a code
# block shows commands, where a `--markdown` value names a file to write, not one to read). A name
# inside a URL belongs to another project and is not checked. A name resolves against the citing
# file's folder or the repository root. A folder copied unchanged from another project (it holds a
# SOURCE-COMMIT file) is not scanned. A Markdown link with an anchor, to another Markdown file or
# to its own (`[x](#anchor)`), must name a heading of that file (its anchor as GitHub writes it: lower case,
# punctuation dropped, spaces as hyphens, a repeated heading numbered -1, -2, ...).
# The README is the front page, not the manual: it fails above README_MAX_LINES lines (the manual
# lives under docs/, docs/README.md its index), so that it stays short enough to read at once.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PYTHON'
import io
import os
import re
import subprocess
import sys
import tokenize

SOURCE_SUFFIXES = (".cpp", ".hpp", ".cu", ".cuh")
HASH_SUFFIXES = (".sh", ".cmake", ".yml", ".yaml")
NAME = re.compile(r"(?<![A-Za-z0-9_./-])([A-Za-z0-9_.][A-Za-z0-9_./-]*\.md)(?![A-Za-z0-9_])")
README_MAX_LINES = 250
LINK = re.compile(r"\[[^\]]*\]\(([^()\s]*)\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+"
                 r"|(?<![\w/.-])(?:[\w-]+\.)+(?:com|org|io|ai|net|dev|edu|gov)/\S*")
JSON_PROSE = re.compile(r'"(?:description|\$comment|title)"\s*:\s*"((?:[^"\\]|\\.)*)"')


def copied_unchanged(path):
    """Whether `path` lies in a folder copied unchanged from another project (one holding a
    SOURCE-COMMIT file, as tests/data/chain-determinism-bench-v1/ does): the names its documents
    cite belong to that project."""
    folder = os.path.dirname(path)
    while folder:
        if os.path.isfile(os.path.join(folder, "SOURCE-COMMIT")):
            return True
        folder = os.path.dirname(folder)
    return False


def candidate_files():
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                                 "--exclude-standard"], check=True, capture_output=True).stdout
        paths = [p for p in listed.decode("utf-8", "replace").split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        paths = []
        for folder, dirs, files in os.walk("."):
            dirs[:] = [d for d in dirs if not d.startswith((".git", "build"))]
            paths += [os.path.relpath(os.path.join(folder, f)) for f in files]
    for path in sorted(set(paths)):
        first = path.split("/", 1)[0]
        if first.startswith(("build", ".git")) or not os.path.isfile(path):
            continue
        if copied_unchanged(path):
            continue
        name = os.path.basename(path)
        if (path.endswith(SOURCE_SUFFIXES + HASH_SUFFIXES + (".py", ".md", ".json"))
                or name == "CMakeLists.txt"):
            yield path


def source_comments(text):
    """(line, text) of every // and /* */ comment, string and character literals skipped."""
    out, line, i, n = [], 1, 0, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append((line, text[i:end]))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            for offset, part in enumerate(text[i:end].split("\n")):
                out.append((line + offset, part))
            line += text.count("\n", i, end)
            i = end
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i + 2)
            delimiter = ")" + text[i + 2:open_paren] + '"'
            end = text.find(delimiter, open_paren)
            end = n if end < 0 or open_paren < 0 else end + len(delimiter)
            line += text.count("\n", i, end)
            i = end
        elif c == '"' or (c == "'" and (i == 0 or not text[i - 1].isalnum())):
            i += 1
            while i < n and text[i] != c and text[i] != "\n":
                i += 2 if text[i] == "\\" else 1
            i += 1
        else:
            i += 1
    return out


def python_comments(text):
    """(line, text) of comments and of docstrings (strings standing alone as a statement)."""
    out, previous = [], None
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                out.append((token.start[0], token.string))
            elif token.type == tokenize.STRING and previous in (
                    None, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
                for offset, part in enumerate(token.string.split("\n")):
                    out.append((token.start[0] + offset, part))
            if token.type not in (tokenize.NL, tokenize.COMMENT):
                previous = token.type
    except (tokenize.TokenError, SyntaxError):
        out = [(number, line) for number, line in enumerate(text.split("\n"), 1)
               if line.lstrip().startswith("#")]
    return out


def hash_comments(text):
    """(line, text) from the first # outside quotes that starts a word, to the end of the line."""
    out = []
    for number, line in enumerate(text.split("\n"), 1):
        quote = None
        for i, c in enumerate(line):
            if quote:
                if c == quote:
                    quote = None
            elif c in "'\"":
                quote = c
            elif c == "#" and (i == 0 or line[i - 1].isspace()):
                out.append((number, line[i:]))
                break
    return out


def markdown_prose(text):
    out, fence = [], None
    for number, line in enumerate(text.split("\n"), 1):
        marker = line.lstrip()[:3]
        if marker in ("```", "~~~"):
            fence = None if fence == marker else (fence or marker)
        elif fence is None:
            out.append((number, line))
    return out


def json_prose(text):
    """(line, text) of the descriptions, comments and titles of a JSON document (a schema)."""
    return [(number, match.group(1)) for number, line in enumerate(text.split("\n"), 1)
            for match in JSON_PROSE.finditer(line)]


def anchor_of(heading):
    """The anchor GitHub gives a heading: its text lower-cased, links and emphasis reduced to their
    text, every character but letters, digits, spaces, hyphens and underscores dropped."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("*", "").lower()
    return "".join(c for c in text if c.isalnum() or c in " -_").replace(" ", "-")


anchors_cache = {}


def anchors(path):
    if path not in anchors_cache:
        seen, found = {}, set()
        with open(path, encoding="utf-8", errors="replace") as file:
            for _, line in markdown_prose(file.read()):
                match = HEADING.match(line)
                if not match:
                    continue
                anchor = anchor_of(match.group(2))
                count = seen.get(anchor, 0)
                seen[anchor] = count + 1
                found.add(anchor if count == 0 else f"{anchor}-{count}")
        anchors_cache[path] = found
    return anchors_cache[path]


def bad_anchors(path, number, line):
    """The messages for each link of a Markdown line whose anchor names no heading of its file."""
    out = []
    for match in LINK.finditer(line):
        target = match.group(1)
        if "#" not in target or URL.match(target) or target.startswith("mailto:"):
            continue
        name, anchor = target.split("#", 1)
        if name and not name.endswith(".md"):
            continue
        linked = os.path.normpath(os.path.join(os.path.dirname(path), name)) if name else path
        if os.path.isfile(linked) and anchor not in anchors(linked):
            out.append(f"doc-links: {path}:{number} links {target}, but {linked} has no heading "
                       f"with the anchor #{anchor}")
    return out


def prose_of(path, text):
    if path.endswith(SOURCE_SUFFIXES):
        return source_comments(text)
    if path.endswith(".py"):
        return python_comments(text)
    if path.endswith(".md"):
        return markdown_prose(text)
    if path.endswith(".json"):
        return json_prose(text)
    return hash_comments(text)


missing = 0
for path in candidate_files():
    with open(path, encoding="utf-8", errors="replace") as file:
        text = file.read()
    folder = os.path.dirname(path)
    for number, line in prose_of(path, text):
        if path.endswith(".md"):
            for message in bad_anchors(path, number, line):
                print(message)
                missing += 1
        urls = [m.span() for m in URL.finditer(line)]
        for match in NAME.finditer(line):
            if any(start <= match.start() < end for start, end in urls):
                continue
            name = match.group(1)
            if os.path.exists(os.path.join(folder, name)) or os.path.exists(name):
                continue
            print(f"doc-links: {path}:{number} names {name}, which does not exist")
            missing += 1
with open("README.md", encoding="utf-8") as file:
    readme_lines = len(file.read().splitlines())
if readme_lines > README_MAX_LINES:
    print(f"doc-links: README.md has {readme_lines} lines, more than {README_MAX_LINES}: the README "
          "is the front page; move the detail into the manual under docs/ (docs/README.md)")
    missing += 1
if missing:
    sys.exit(1)
print("doc-links: ok")
PYTHON
