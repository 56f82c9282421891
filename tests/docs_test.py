#!/usr/bin/env python3
"""The README and docs/ stay true to the tree: every relative link reaches a file (and every #anchor a
heading of it), every `--flag` they name exists, the README stays short (at most 12 KB), and
docs/layout.md names every source folder there is (Sources/ and clients/swift/Sources/) and no other.

Flags are looked up where they are defined: `browserd serve --help` and `browserd healthcheck --help`
(the binary given), the @Option/@Flag properties of the Swift clients' commands (clients/swift), the
argparse options of the bench, test and script programs, and a short list of other tools' flags the
docs show (swift, curl, Chromium).

Usage: tests/docs_test.py PATH_TO_BROWSERD
"""
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
README_LIMIT = 12 * 1024
# Other programs' flags that the docs show in their commands.
OTHER_TOOLS = {
    "swift": {"--build", "--filter", "--package-path", "--scratch-path", "--show-bin-path", "--strict", "--traits", "--help"},
    "curl": {"--data-binary"},
    "renderer-bench": {"--fence", "--server", "--pages", "--navigations", "--live-pages", "--watch", "--requests"},
    "perf": {"--no-inherit"},
    "chromium": {"--remote-debugging-pipe", "--remote-debugging-port", "--proxy-server", "--proxy-bypass-list", "--disable-ipc-flooding-protection"},
}


def documents():
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation but hyphens dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    with open(path) as f:
        return {slug(line.lstrip("#")) for line in f if re.match(r"#{1,6} ", line)}


def known_flags(browserd):
    flags = set()
    for command in (["serve", "--help"], ["healthcheck", "--help"]):
        text = subprocess.run([browserd] + command, capture_output=True, text=True, check=True).stdout
        flags |= set(re.findall(r"--[a-z][a-z0-9-]*", text))
    for source in glob.glob(os.path.join(ROOT, "clients", "swift", "Sources", "browserd-*", "*.swift")):
        text = open(source).read()
        # An @Option(...) on one line or several (its help may hold parentheses of its own).
        for name in re.findall(r"@(?:Option|Flag)\((?:[^()]|\([^()]*\))*\)\s*var (\w+)", text):
            flags.add("--" + re.sub(r"(?<!^)([A-Z])", r"-\1", name).lower())
    for script in glob.glob(os.path.join(ROOT, "*", "*.py")):
        flags |= set(re.findall(r"add_argument\(\s*\"(--[a-z0-9-]+)\"", open(script).read()))
    for tool in OTHER_TOOLS.values():
        flags |= tool
    return flags


def layout_problems(problems):
    """docs/layout.md names each rung of Sources/ as `Sources/RUNG`, each module folder (of a rung,
    of bench/Sources and fuzz/Sources, and of clients/swift/Sources) as `NAME`, and no Sources/ folder
    that is not there; and those module folders are exactly the targets Package.swift puts there."""
    text = open(os.path.join(ROOT, "docs", "layout.md")).read()

    def folders(path):
        path = os.path.join(ROOT, path)
        return sorted(d for d in os.listdir(path) if os.path.isdir(os.path.join(path, d)))

    rungs = folders("Sources")
    modules = {}
    for rung in rungs:
        for module in folders(os.path.join("Sources", rung)):
            modules["Sources/%s/%s" % (rung, module)] = module
    for place in ("bench/Sources", "fuzz/Sources"):
        for module in folders(place):
            modules["%s/%s" % (place, module)] = module
    clients = folders(os.path.join("clients", "swift", "Sources"))
    for rung in rungs:
        if "`Sources/%s`" % rung not in text:
            problems.append("docs/layout.md: Sources/%s is not named" % rung)
    for named in sorted(set(re.findall(r"`((?:Sources|bench/Sources|fuzz/Sources)/[A-Za-z0-9_/-]+)`", text))):
        if not os.path.isdir(os.path.join(ROOT, named)):
            problems.append("docs/layout.md: %s does not exist" % named)
    for path, module in sorted(modules.items()):
        if "`%s`" % module not in text:
            problems.append("docs/layout.md: %s is not named" % path)
    for folder in clients:
        if "`%s`" % folder not in text:
            problems.append("docs/layout.md: clients/swift/Sources/%s is not named" % folder)
    manifest = open(os.path.join(ROOT, "Package.swift")).read()
    declared = set(re.findall(r'path: "((?:Sources|bench/Sources|fuzz/Sources)/[^"]+)"', manifest))
    for path in sorted(declared.symmetric_difference(modules)):
        where = "Package.swift names no target there" if path in modules else "no such folder"
        problems.append("Package.swift and Sources/ differ at %s: %s" % (path, where))
    return len(rungs) + len(modules) + len(clients)


def main():
    browserd = sys.argv[1]
    problems = []
    size = os.path.getsize(os.path.join(ROOT, "README.md"))
    if size > README_LIMIT:
        problems.append("README.md is %d bytes (at most %d): move sections into docs/" % (size, README_LIMIT))
    flags = known_flags(browserd)
    links = named = 0
    for document in documents():
        text = open(document).read()
        here = os.path.dirname(document)
        name = os.path.relpath(document, ROOT)
        # Links outside code: [text](target) and ![alt](target).
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", prose):
            if re.match(r"[a-z]+:", target):
                continue
            links += 1
            path, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(here, path)) if path else document
            if not os.path.exists(resolved):
                problems.append("%s: the link %s reaches no file" % (name, target))
            elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
                problems.append("%s: the link %s names no heading of %s" % (name, target, os.path.relpath(resolved, ROOT)))
        for flag in sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]+", text))):
            named += 1
            if flag not in flags:
                problems.append("%s: %s is no flag of browserd, its clients, scripts or the tools listed here" % (name, flag))
    folders = layout_problems(problems)
    if problems:
        sys.exit("docs:\n  " + "\n  ".join(problems))
    print("docs: README %d bytes; %d links and %d flags in %d documents all exist; docs/layout.md names the %d source folders"
          % (size, links, named, len(documents()), folders))


if __name__ == "__main__":
    main()
