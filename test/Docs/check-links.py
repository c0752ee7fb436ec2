#!/usr/bin/python3
"""Checks that the project's documentation stands on its own.

    check-links.py ROOT

Two checks over the files under ROOT (the repository's root):

1. Links. In every Markdown file (*.md), every relative link must name a
   file or directory that exists inside ROOT: inline links and images
   ([text](target), ![alt](target)), reference definitions ([label]: target)
   and HTML links (<a href="target">, <img src="target">). A target starting
   with "/" is taken from ROOT, as GitHub does; any other from the linking
   file's folder. A target that leaves ROOT, or lies in a skipped folder
   (below), is broken even if it exists on this machine. Links with an
   http:, https: or mailto: scheme and links to an anchor of the same file
   (#anchor alone) are not checked; any other scheme is an error. A
   #anchor into another Markdown file must match one of its headings, by
   GitHub's rules: the heading's text (ATX headings, "# ..."; code spans,
   links and emphasis reduced to their text) lowercased, every character
   but letters, digits, '_', '-' and spaces removed, spaces turned into
   '-'; the second heading with the same slug gets "-1", the third "-2".
   Explicit anchors (<a name="x">, id="x") count too. Links inside fenced
   code blocks and code spans are text, not links.

2. Mentions. No file under ROOT may mention the design document that lives
   outside the repository (the strings in FORBIDDEN): the project's own
   docs/Design.md holds what the project relies on.

Skipped, in both checks: the folders .git, __pycache__ and .cache anywhere,
build and build-* at the top of ROOT (build outputs), and test/Docs/Inputs,
which holds this script's own test fixtures (broken on purpose; run the
script on a fixture folder itself to check it).

Each problem is printed as "FILE:LINE: message", FILE relative to ROOT,
followed by a count. Exit status: 0 without problems, 1 with some, 2 on a
usage error. Python's standard library only.
"""

import os
import re
import sys
import urllib.parse

# Built from pieces so that this file does not mention them itself.
FORBIDDEN = ("DESIGN" + ".md", "../shared/" + "DESIGN")

SKIPPED_ANYWHERE = {".git", "__pycache__", ".cache"}
SKIPPED_AT_ROOT = re.compile(r"^build(-.*)?$")
SKIPPED_PATHS = {os.path.join("test", "Docs", "Inputs")}

CHECKED_SCHEMES = ("http", "https", "mailto")

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
HTML_COMMENT = re.compile(r"<!--.*?-->")
INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]"      # [text], one level of nesting
    r"\(\s*(<[^>]*>|[^)\s]+)"               # (target
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")  # optional "title")
REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HTML_LINK = re.compile(
    r"<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')",
    re.IGNORECASE)
HTML_ANCHOR = re.compile(
    r"<[a-z][^>]*?\b(?:name|id)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')",
    re.IGNORECASE)
ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:\s+(.*?))?(?:\s+#+)?\s*$")
SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")


def is_skipped(relative_dir, name):
    """Whether the folder `name` inside `relative_dir` (relative to the
    root, "" for the root itself) is left out."""
    if name in SKIPPED_ANYWHERE:
        return True
    if relative_dir == "" and SKIPPED_AT_ROOT.match(name):
        return True
    return os.path.join(relative_dir, name) in SKIPPED_PATHS


def walk(root):
    """Every file under `root` that is not skipped, as a path relative to
    `root`, in a stable order."""
    for directory, dirnames, filenames in os.walk(root):
        relative_dir = os.path.relpath(directory, root)
        if relative_dir == ".":
            relative_dir = ""
        dirnames[:] = sorted(d for d in dirnames
                             if not is_skipped(relative_dir, d))
        for filename in sorted(filenames):
            yield os.path.join(relative_dir, filename)


def in_skipped_folder(relative_path):
    """Whether a path relative to the root lies in a skipped folder."""
    parts = relative_path.split(os.sep)
    for depth in range(len(parts) - 1):
        if is_skipped(os.path.join(*parts[:depth]) if depth else "",
                      parts[depth]):
            return True
    return False


def outside_fences(text):
    """(line number, line) of the lines of `text` outside fenced code
    blocks."""
    fence = None
    for number, line in enumerate(text.split("\n"), start=1):
        match = FENCE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
            else:
                yield number, line
        elif match and match.group(1)[0] == fence[0] and \
                len(match.group(1)) >= len(fence) and \
                not line[match.end():].strip():
            fence = None


def markdown_lines(text):
    """(line number, line) of the lines outside fenced code blocks, with
    HTML comments and code spans blanked out."""
    for number, line in outside_fences(text):
        line = HTML_COMMENT.sub("", line)
        line = CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)
        yield number, line


def heading_text(markdown):
    """The text of a heading as GitHub renders it, near enough for slugs."""
    text = CODE_SPAN.sub(lambda m: m.group(2).strip(), markdown)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links, images
    text = re.sub(r"<[^>]+>", "", text)                      # HTML tags
    text = text.replace("*", "")
    text = re.sub(r"(?<![A-Za-z0-9])_+|_+(?![A-Za-z0-9])", "", text)
    return text.strip()


def slug(text):
    """GitHub's anchor for a heading whose rendered text is `text`."""
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors_of(path, cache):
    """The anchors that the Markdown file at `path` defines."""
    if path not in cache:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        anchors, seen = set(), {}
        for _, line in outside_fences(text):
            heading = ATX_HEADING.match(line)
            if heading:
                base = slug(heading_text(heading.group(2) or ""))
                count = seen.get(base, 0)
                seen[base] = count + 1
                anchors.add(base if count == 0 else f"{base}-{count}")
            for match in HTML_ANCHOR.finditer(line):
                anchors.add(match.group(1) or match.group(2) or "")
        cache[path] = anchors
    return cache[path]


def link_targets(line):
    """The link targets on one (cleaned) Markdown line."""
    for match in INLINE_LINK.finditer(line):
        yield match.group(1)
    match = REFERENCE_DEFINITION.match(line)
    if match:
        yield match.group(1)
    for match in HTML_LINK.finditer(line):
        yield match.group(1) if match.group(1) is not None else match.group(2)


def check_link(root, source, target, anchor_cache):
    """The problem with `target`, linked from the file `source` (relative to
    `root`), or None."""
    target = target.strip()
    if target.startswith("<") and target.endswith(">"):
        target = target[1:-1].strip()
    scheme = SCHEME.match(target)
    if scheme:
        if scheme.group(1).lower() in CHECKED_SCHEMES:
            return None
        return f"link '{target}' is neither relative nor http(s)/mailto"
    if target.startswith("#") or not target:
        return None
    path, _, anchor = target.partition("#")
    path = urllib.parse.unquote(path.partition("?")[0])
    anchor = urllib.parse.unquote(anchor)
    if path.startswith("/"):
        resolved = os.path.join(root, path.lstrip("/"))
    else:
        resolved = os.path.join(root, os.path.dirname(source), path)
    resolved = os.path.normpath(resolved)
    relative = os.path.relpath(resolved, root)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return f"broken link '{target}': outside the repository"
    if in_skipped_folder(relative):
        return f"broken link '{target}': not part of the repository"
    if not os.path.exists(resolved):
        return f"broken link '{target}': no such file or directory"
    if anchor and resolved.endswith(".md") and os.path.isfile(resolved):
        if anchor not in anchors_of(resolved, anchor_cache):
            shown = relative.replace(os.sep, "/")
            return f"broken link '{target}': no heading '#{anchor}' in {shown}"
    return None


def check(root):
    """All problems under `root`, as "FILE:LINE: message" strings."""
    problems = []
    anchor_cache = {}
    for relative in walk(root):
        shown = relative.replace(os.sep, "/")
        path = os.path.join(root, relative)
        if os.path.islink(path) and not os.path.exists(path):
            continue
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as error:
            problems.append(f"{shown}:0: cannot read: {error.strerror}")
            continue
        text = data.decode("utf-8", errors="replace")

        for number, line in enumerate(text.split("\n"), start=1):
            for forbidden in FORBIDDEN:
                if forbidden in line:
                    problems.append(
                        f"{shown}:{number}: mentions '{forbidden}', a "
                        "document outside the repository; cite "
                        "docs/Design.md instead")

        if not relative.endswith(".md"):
            continue
        for number, line in markdown_lines(text):
            for target in link_targets(line):
                problem = check_link(root, relative, target, anchor_cache)
                if problem:
                    problems.append(f"{shown}:{number}: {problem}")
    return problems


def main(argv):
    if len(argv) != 2 or argv[1].startswith("-"):
        print("usage: check-links.py ROOT", file=sys.stderr)
        return 2
    root = os.path.abspath(argv[1])
    if not os.path.isdir(root):
        print(f"check-links.py: {argv[1]} is not a folder", file=sys.stderr)
        return 2
    problems = check(root)
    for problem in problems:
        print(problem)
    if problems:
        print(f"check-links.py: {len(problems)} problem(s) under {argv[1]}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
