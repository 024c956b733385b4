#!/usr/bin/env python3
"""Checks that the docs are true to the code where a machine can tell:

  * every repository path that the docs, a tool's --help or a script's comments name
    (configs/..., scripts/..., docs/..., bench/..., examples/..., lib/..., tests/...,
    slurm/..., analysis/...) exists;
  * every --flag shown with an xtk tool in the docs (a command line in a code block
    or a code span: `xtk-gen --profile burst`) is in that tool's --help, or in the
    --help of the subcommand the line names;
  * every link from one Markdown file to another, or within one, leads to a file that
    exists and, with a #fragment, to a heading there (GitHub's anchors).

    scripts/check-docs.py BUILD_DIR      # exit 1 listing each stale mention as file:line

The docs are README.md, docs/*.md and every other *.md in the repository outside
build/; tool help comes from BUILD_DIR/tools/NAME/NAME.
"""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOOLS = ["xtk-gen", "xtk-server", "xtk-client", "xtk-log", "xtk-collective", "xtk-analyze", "xtk-run",
         "xtk-testbed", "xtk"]
TOP = r"(?:configs|scripts|docs|bench|examples|lib|tests|slurm|analysis|tools|cmake)"
PATH = re.compile(r"(?<![\w./-])(" + TOP + r"/[\w./-]*[\w/])")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
PLACEHOLDER = re.compile(r"[<>{}*]|NAME|\.\.\.")
LINK = re.compile(r"\]\(([^()\s]*)\)")
FENCE = re.compile(r"^\s*```")


def markdown_files():
    for path in sorted(ROOT.rglob("*.md")):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in ("build", ".git", ".cache", "peers") or "node_modules" in rel.parts:
            continue
        yield path


def tool_help(build, tool, chain):
    binary = build / "tools" / tool / tool
    argv = [str(binary)] + chain + ["--help"]
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout
    except OSError as e:
        sys.exit(f"check-docs: cannot run {binary}: {e} (build the tools first)")


def subcommands(help_text):
    """Names listed under "Subcommands:" in CLI11's help."""
    names, inside = [], False
    for line in help_text.splitlines():
        if line.strip() == "Subcommands:":
            inside = True
            continue
        if inside:
            m = re.match(r"  ([a-z][\w-]*)(?:  |$)", line)
            if m:
                names.append(m.group(1))
            elif line.strip() and not line.startswith(" "):
                inside = False
    return names


def command_lines(text):
    """(line number, text) of each code block line and each code span."""
    in_block = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_block = not in_block
            continue
        if in_block:
            yield number, line
        else:
            for span in re.findall(r"`([^`]+)`", line):
                yield number, span


def anchors(path):
    """The #fragments GitHub gives a Markdown file's headings."""
    seen, result, fenced = {}, set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
        if fenced or not re.match(r"#{1,6} ", line):
            continue
        title = re.sub(r"[`*]|\[([^]]*)\]\([^)]*\)", lambda m: m.group(1) or "", line.lstrip("#").strip())
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        result.add(slug if n == 0 else f"{slug}-{n}")
    return result


def check_links(doc, problems, cache):
    """Links to Markdown files of the repository, and their #fragments."""
    fenced = False
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
        if fenced:
            continue
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"[a-z]+:", target) or not target:
                continue
            file, _, fragment = target.partition("#")
            path = (doc.parent / file).resolve() if file else doc
            where = f"{doc.relative_to(ROOT)}:{number}"
            if not path.exists():
                problems.append(f"{where}: link to {file}: no such file")
            elif fragment and path.suffix == ".md":
                if path not in cache:
                    cache[path] = anchors(path)
                if fragment not in cache[path]:
                    problems.append(f"{where}: link to {target}: no heading there has the anchor #{fragment}")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build = pathlib.Path(sys.argv[1]).resolve()
    # Help of each tool and of each chain of subcommands ("xtk-analyze predict dp").
    helps, subs = {}, {}
    pending = [(tool,) for tool in TOOLS]
    while pending:
        chain = pending.pop()
        helps[chain] = tool_help(build, chain[0], list(chain[1:]))
        subs[chain] = subcommands(helps[chain]) if len(chain) < 4 else []
        pending += [chain + (sub,) for sub in subs[chain] if chain + (sub,) not in helps]
    problems = []

    def check_paths(where, text_lines):
        for number, line in text_lines:
            for m in PATH.finditer(line):
                path = m.group(1).rstrip(".")
                following = line[m.end():m.end() + 1]
                if PLACEHOLDER.search(path) or following in ("*", "{", "<"):
                    continue
                # A module named without its extension (lib/formats/counters) counts.
                target = ROOT / path
                if not target.exists() and not list(target.parent.glob(target.name + ".*")):
                    problems.append(f"{where}:{number}: {path} does not exist")

    anchor_cache = {}
    for doc in markdown_files():
        check_links(doc, problems, anchor_cache)
        rel = doc.relative_to(ROOT)
        text = doc.read_text(encoding="utf-8")
        check_paths(rel, enumerate(text.splitlines(), 1))
        for number, line in command_lines(text):
            words = line.replace("(", " ").replace(")", " ").split()
            for i, word in enumerate(words):
                tool = pathlib.PurePath(word).name
                if tool not in TOOLS or (tool == "xtk" and (i + 1 >= len(words) or words[i + 1] != "demo")):
                    continue
                # The words of this command: up to a pipe, a semicolon, a comment or another tool.
                rest = []
                for w in words[i + 1:]:
                    if w in ("|", "||", "&&", ";") or w.startswith("#") or pathlib.PurePath(w).name in TOOLS:
                        break
                    rest.append(w)
                chain = (tool,)
                for w in rest:
                    if w in subs.get(chain, []):
                        chain += (w,)
                known = "".join(helps[chain[:k]] for k in range(1, len(chain) + 1))
                for w in rest:
                    flag = FLAG.match(w.split("=")[0])
                    if flag and flag.group(1) not in known and flag.group(1) not in ("--help", "--version"):
                        problems.append(f"{rel}:{number}: {flag.group(1)} is not in `{' '.join(chain)} --help`")
                break
    for chain, text in helps.items():
        check_paths(" ".join(chain) + " --help", enumerate(text.splitlines(), 1))
    # The scripts' usage comments name configs and scripts too.
    for script in sorted([*ROOT.glob("slurm/*.sbatch"), *ROOT.glob("scripts/*.sh"), *ROOT.glob("bench/*/*.sh")]):
        comments = [(n, line) for n, line in enumerate(script.read_text(encoding="utf-8").splitlines(), 1)
                    if line.lstrip().startswith("#")]
        check_paths(script.relative_to(ROOT), comments)
    for p in sorted(set(problems)):
        print(p)
    if problems:
        print(f"check-docs: {len(set(problems))} stale mentions")
        return 1
    print(f"check-docs: paths, flags and links in {sum(1 for _ in markdown_files())} documents and "
          f"{len(helps)} --help texts are true to the tree and the tools")
    return 0


if __name__ == "__main__":
    sys.exit(main())
