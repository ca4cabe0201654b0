#!/usr/bin/env python3
"""podq's docs check (standard library only): `python3 .ci/check_docs.py` from anywhere.

Over README.md, docs/ and crates/ (target/ skipped) it checks:

1. Language: no word of how the project was developed (the same match as
   `grep -rniwE '<pattern>' README.md docs crates`, LANG_RE below); no mention of the removed
   docs/benchmarks-history.md; docs/benchmarks.md at most 300 lines, docs/simulator.md at most
   400; no source file of crates/podq/src outside tests over 600 lines.
2. Protocol steps: the ids that the crates' READMEs define (a bold id at the start of a list
   item or paragraph: `1. **P1** Hand over.`, `**P2w** ...`) are defined once, numbered 1..n
   in the order listed, and a prefix letter belongs to one protocol (one README, one section).
   In every .rs, .md and .toml file, each citation with a defined prefix (`P3`, `W5-W7`,
   `R1-R5`: every id of a range) names a defined step, and none uses the prefix S, which
   would be ambiguous (shutdown is T, steering G).
   No step is cited by its bare number: `step 4`, `// Step 4`, `steps 31-35` anywhere, and
   `(17)`, `(2, 10)` in the crates' READMEs.
3. Links: every relative markdown link and reference definition in the markdown files, and in
   Rust doc comments (`//!`, `///`) those whose target is a path, names an existing file or
   folder, and its `#anchor` a heading of the target (GitHub's slug rules). Code blocks and
   code spans are skipped. Intra-doc links are rustdoc's job (`cargo doc`, `-D warnings`).

Prints `path:line: message` per problem, then a count, and exits 1; or prints a one-line
summary and exits 0. `--self-test` runs the checks on a small made-up tree and asserts that
they find exactly the problems planted there.
"""

import os
import re
import sys
import tempfile
import unicodedata
import urllib.parse

# ---------------------------------------------------------------------------------------------
# Rules

LANG_RE = re.compile(
    r"(?<!\w)(?:sess" r"ions?"
    r"|(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth"
    r"|[a-z]+teenth|twentieth|[0-9]+(?:st|nd|rd|th)) pass(?:es)?"
    r"|the b" r"rief)(?!\w)",
    re.IGNORECASE,
)
REMOVED_PAGE = "docs/benchmarks-history.md"
LINE_LIMITS = {"docs/benchmarks.md": 300, "docs/simulator.md": 400}
SRC_LIMIT_DIR = "crates/podq/src"
SRC_LIMIT = 600

# A step's definition: a bold id at the start of a list item or paragraph of a crate's README.
DEF_RE = re.compile(r"^\s*(?:(?:\d+[.)]|[-*+])\s+)?\*\*([A-Z])(\d{1,2})([a-z]?)(?:[.:]?\*\*|\s)")
# An id written as a list marker (`S1. **Ticket.**`): not a definition the check can see.
LOOSE_DEF_RE = re.compile(r"^\s*([A-Z]\d{1,2}[a-z]?)[.)]\s+\*\*")
ID_RE = re.compile(r"\b([A-Z])(\d{1,2})([a-z]?)\b")
RANGE_RE = re.compile(r"\b([A-Z])(\d{1,2})([a-z]?)[-\u2013]([A-Z])(\d{1,2})([a-z]?)\b")
BARE_STEP_RE = re.compile(r"\bsteps?\s+\d+", re.IGNORECASE)
# "... steps" at a line's end, the number on the next line (after a comment's `//`, `*`, `#`).
STEP_EOL_RE = re.compile(r"\bsteps?\s*$", re.IGNORECASE)
NEXT_NUM_RE = re.compile(r"^\s*(?://[/!]?|\*|#)?\s*(\d+)(?!\d|[.)](?:\s|$))")
# A step cited by its number alone, `(17)` or `(2, 10)`: looked for in the crates' READMEs only
# (elsewhere such numbers are table cells and enumerations).
PAREN_NUM_RE = re.compile(
    r"(?<![\w\]\)`!>])\((\d{1,2})((?:,\s?|\s(?:and|or)\s|-|\u2013)\d{1,2})*\)")
# Prefixes no protocol may take: a citation with one is ambiguous.
AMBIGUOUS_PREFIXES = {"S": "shutdown steps are T1-T3 and steering steps G1-G5"}
URL_RE = re.compile(r"\b(?:https?|ftp|mailto|file):[^\s)>\]\"'`]*", re.IGNORECASE)

FENCE_RE = re.compile(r"^\s*(`{3,}|~{3,})")
HEADING_RE = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
SETEXT_RE = re.compile(r"^\s{0,3}(=+|-+)\s*$")
CODE_SPAN_RE = re.compile(r"(?<!`)(`+)(?!`)((?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", re.DOTALL)
INLINE_LINK_RE = re.compile(
    r"(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)"
)
REF_DEF_RE = re.compile(r"^ {0,3}\[([^\]]+)\]:\s*(<[^>]*>|\S+)", re.MULTILINE)
HTML_LINK_RE = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*\"([^\"]*)\"", re.IGNORECASE)
HTML_ANCHOR_RE = re.compile(r"<a\b[^>]*?\b(?:name|id)\s*=\s*\"([^\"]*)\"", re.IGNORECASE)
SCHEME_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")

RS_DOC_RE = re.compile(r"^\s*//(?:/(?!/)|!)")

CHECKED_SUFFIXES = (".rs", ".md", ".toml")


class Checker:
    def __init__(self, root):
        self.root = os.path.abspath(root)
        self.problems = []
        self.defined = {}  # id -> (path, line)
        self.prefixes = set()
        self.citations = 0
        self.links = 0
        self._headings = {}

    def report(self, path, line, msg):
        self.problems.append((path, line, msg))

    # -- files --------------------------------------------------------------------------------

    def walk(self, top):
        """Every regular file under `top` (relative to the root), sorted, target/ skipped."""
        base = os.path.join(self.root, top)
        if os.path.isfile(base):
            return [top]
        out = []
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d != "target" and d != ".git")
            for name in sorted(filenames):
                full = os.path.join(dirpath, name)
                if os.path.isfile(full) and not os.path.islink(full):
                    out.append(os.path.relpath(full, self.root).replace(os.sep, "/"))
        return out

    def read(self, rel):
        with open(os.path.join(self.root, rel), "rb") as f:
            data = f.read()
        if b"\0" in data:
            return None
        return data.decode("utf-8", errors="replace")

    def run(self):
        grep_set = self.walk("README.md") + self.walk("docs") + self.walk("crates")
        checked = [
            p for p in grep_set
            if p == "README.md"
            or (p.startswith("docs/") and p.endswith(".md"))
            or (p.startswith("crates/") and p.endswith(CHECKED_SUFFIXES))
        ]
        texts = {}
        for p in grep_set:
            t = self.read(p)
            if t is not None:
                texts[p] = t
        for p in grep_set:
            if p in texts:
                self.check_language(p, texts[p])
        self.check_sizes(texts)
        readmes = [p for p in checked if p.startswith("crates/") and p.endswith("/README.md")]
        self.collect_steps(readmes, texts)
        for p in checked:
            if p in texts:
                self.check_citations(p, texts[p])
        for p in checked:
            if p not in texts:
                continue
            if p.endswith(".md"):
                self.check_md_links(p, texts[p])
            elif p.endswith(".rs"):
                self.check_rs_links(p, texts[p])
        self.problems.sort(key=lambda x: (x[0], x[1], x[2]))
        return self.problems

    # -- 1. language and sizes ----------------------------------------------------------------

    def check_language(self, path, text):
        for n, line in enumerate(text.split("\n"), 1):
            for m in LANG_RE.finditer(line):
                self.report(path, n, "says how the project was developed: %r" % m.group(0))
            if path.endswith(CHECKED_SUFFIXES) and "benchmarks-history" in line:
                self.report(path, n, "names %s, which is removed" % REMOVED_PAGE)

    def check_sizes(self, texts):
        if os.path.exists(os.path.join(self.root, REMOVED_PAGE)):
            self.report(REMOVED_PAGE, 1, "this page is removed: the results page shows today's "
                        "figures only, the history belongs in commit messages")
        for path, limit in sorted(LINE_LIMITS.items()):
            if path in texts:
                n = len(texts[path].splitlines())
                if n > limit:
                    self.report(path, 1, "%d lines, at most %d" % (n, limit))
        for path in sorted(texts):
            if not (path.startswith(SRC_LIMIT_DIR + "/") and path.endswith(".rs")):
                continue
            parts = path.split("/")
            name = parts[-1]
            if "tests" in parts[:-1] or name == "tests.rs" or name.endswith("_tests.rs"):
                continue
            n = len(texts[path].splitlines())
            if n > SRC_LIMIT:
                self.report(path, 1, "%d lines, at most %d outside tests: split it" % (n, SRC_LIMIT))

    # -- 2. protocol steps --------------------------------------------------------------------

    def collect_steps(self, readmes, texts):
        where = {}  # letter -> {(path, heading)}
        order = {}  # letter -> [(number, suffix, path, line, heading)]
        for path in readmes:
            heading = ""
            fence = None
            for n, line in enumerate(texts.get(path, "").split("\n"), 1):
                fence, in_code = _fence_step(fence, line)
                if in_code:
                    continue
                h = HEADING_RE.match(line)
                if h:
                    heading = h.group(2)
                    continue
                m = DEF_RE.match(line)
                if not m:
                    loose = LOOSE_DEF_RE.match(line)
                    if loose:
                        self.report(path, n, "step %s is not written as a bold id "
                                    "(`1. **%s** ...`): no citation of it can be checked"
                                    % (loose.group(1), loose.group(1)))
                    continue
                letter, num, suffix = m.group(1), int(m.group(2)), m.group(3)
                sid = "%s%d%s" % (letter, num, suffix)
                if sid in self.defined:
                    p0, l0 = self.defined[sid]
                    self.report(path, n, "step %s is defined twice (also %s:%d)" % (sid, p0, l0))
                    continue
                self.defined[sid] = (path, n)
                where.setdefault(letter, set()).add((path, heading))
                order.setdefault(letter, []).append((num, suffix, path, n, heading))
        for letter in sorted(where):
            places = sorted(where[letter])
            files = sorted({p for p, _ in places})
            if len(files) > 1:
                self.report(files[1], min(e[3] for e in order[letter] if e[2] == files[1]),
                            "prefix %s is used by two protocols: %s and %s"
                            % (letter, files[0], files[1]))
            elif len(places) > 1:
                by_heading = {}
                for e in order[letter]:
                    by_heading.setdefault(e[4], e[3])
                heads = sorted(by_heading, key=by_heading.get)
                self.report(files[0], by_heading[heads[1]],
                            "prefix %s is used by two protocols of this file: under %s"
                            % (letter, " and ".join("%r" % h[:40] for h in heads)))
            plain = [(num, path, line) for num, suffix, path, line, _ in order[letter] if not suffix]
            nums = [num for num, _, _ in plain]
            if nums != list(range(1, len(nums) + 1)):
                path, line = plain[0][1:] if plain else order[letter][0][2:4]
                self.report(path, line, "steps %s are not numbered %s1..%s%d in the order they "
                            "are listed: %s" % (letter, letter, letter, len(nums),
                                                ", ".join("%s%d" % (letter, x) for x in nums)))
            for num, suffix, path, line, _ in order[letter]:
                if suffix and "%s%d" % (letter, num) not in self.defined:
                    self.report(path, line, "step %s%d%s has no step %s%d"
                                % (letter, num, suffix, letter, num))
        self.prefixes = set(where)

    def check_citations(self, path, text):
        lines = text.split("\n")
        readme = path.startswith("crates/") and path.endswith("/README.md")
        prose = _blank_code(text).split("\n") if readme else []
        for n, raw in enumerate(lines, 1):
            line = URL_RE.sub(lambda m: " " * len(m.group(0)), raw)
            for m in BARE_STEP_RE.finditer(line):
                self.report(path, n, "bare numbered step %r: cite the step by its id (`step Q4`)"
                            % m.group(0))
            if STEP_EOL_RE.search(line) and n < len(lines):
                nxt = NEXT_NUM_RE.match(lines[n])
                if nxt:
                    self.report(path, n, "bare numbered step 'step(s) %s' (over two lines): cite "
                                "the step by its id" % nxt.group(1))
            if readme:
                for m in PAREN_NUM_RE.finditer(prose[n - 1]):
                    self.report(path, n, "bare step number %r: cite the step by its id"
                                % m.group(0))
            for letter, instead in sorted(AMBIGUOUS_PREFIXES.items()):
                if letter in self.prefixes:
                    continue
                for m in ID_RE.finditer(line):
                    if m.group(1) == letter:
                        self.citations += 1
                        self.report(path, n, "%s: the prefix %s names no protocol (%s)"
                                    % (m.group(0), letter, instead))
            if not self.prefixes:
                continue
            taken = []
            for m in RANGE_RE.finditer(line):
                a_l, a_n, a_s, b_l, b_n, b_s = m.groups()
                if a_l not in self.prefixes and b_l not in self.prefixes:
                    continue
                taken.append(m.span())
                self.citations += 1
                ends = []
                for l, num, s in ((a_l, a_n, a_s), (b_l, b_n, b_s)):
                    sid = "%s%d%s" % (l, int(num), s)
                    bad_end = l in self.prefixes and (sid not in self.defined or num[0] == "0")
                    ends.append([sid] if bad_end else [])
                between = []
                if a_l == b_l:
                    lo, hi = int(a_n), int(b_n)
                    if lo > hi:
                        self.report(path, n, "range %s runs backwards" % m.group(0))
                    for k in range(lo + 1, hi):
                        if "%s%d" % (a_l, k) not in self.defined:
                            between.append("%s%d" % (a_l, k))
                bad = ends[0] + between + ends[1]
                if bad:
                    self.report(path, n, "range %s cites undefined step%s %s"
                                % (m.group(0), "s" if len(bad) > 1 else "", ", ".join(bad)))
            for m in ID_RE.finditer(line):
                if m.group(1) not in self.prefixes:
                    continue
                if any(a <= m.start() < b for a, b in taken):
                    continue
                self.citations += 1
                sid = "%s%d%s" % (m.group(1), int(m.group(2)), m.group(3))
                if sid not in self.defined or m.group(2).startswith("0"):
                    self.report(path, n, "%s names no defined step (prefix %s is %s's)"
                                % (m.group(0), m.group(1), self.owner(m.group(1))))

    def owner(self, letter):
        for sid, (p, _) in sorted(self.defined.items()):
            if sid[0] == letter:
                return p
        return "?"

    # -- 3. links -----------------------------------------------------------------------------

    def check_md_links(self, path, text):
        self.check_links(path, _blank_code(text), path_like_only=False)

    def check_rs_links(self, path, text):
        doc = []
        for line in text.split("\n"):
            m = RS_DOC_RE.match(line)
            doc.append(line[m.end():] if m else "")
        self.check_links(path, _blank_code("\n".join(doc)), path_like_only=True)

    def check_links(self, path, text, path_like_only):
        """`text` has code blanked out, with the same lines as the file."""
        starts = _line_starts(text)
        found = []
        for m in INLINE_LINK_RE.finditer(text):
            if "\n\n" in m.group(0) or re.search(r"\n[ \t]*\n", m.group(0)):
                continue
            found.append((m.start(3), m.group(3)))
        for m in REF_DEF_RE.finditer(text):
            found.append((m.start(2), m.group(2)))
        if not path_like_only:
            for m in HTML_LINK_RE.finditer(text):
                found.append((m.start(1), m.group(1)))
        for pos, target in sorted(found):
            line = _line_of(starts, pos)
            target = target.strip()
            if target.startswith("<") and target.endswith(">"):
                target = target[1:-1].strip()
            if not target or SCHEME_RE.match(target) or target.startswith("//"):
                continue
            if path_like_only:
                file_part = target.split("#", 1)[0]
                if "::" in target or not (
                        "/" in file_part or file_part.endswith((".md", ".rs", ".svg"))):
                    continue
            self.links += 1
            self.check_target(path, line, target)

    def check_target(self, path, line, target):
        file_part, _, anchor = target.partition("#")
        file_part = urllib.parse.unquote(file_part.split("?", 1)[0])
        if file_part:
            if file_part.startswith("/"):
                dest = os.path.normpath(os.path.join(self.root, file_part.lstrip("/")))
            else:
                dest = os.path.normpath(os.path.join(self.root, os.path.dirname(path), file_part))
            rel = os.path.relpath(dest, self.root).replace(os.sep, "/")
            if rel.startswith("../") or rel == "..":
                self.report(path, line, "link %s points outside the repository" % target)
                return
            if not os.path.exists(dest):
                self.report(path, line, "link %s: no such file or folder (%s)" % (target, rel))
                return
        else:
            rel = path
        if not anchor:
            return
        if not rel.endswith(".md") or os.path.isdir(os.path.join(self.root, rel)):
            return  # GitHub's line anchors (#L10) and the like are not checked
        slugs = self.anchors(rel)
        if urllib.parse.unquote(anchor) not in slugs:
            self.report(path, line, "link %s: %s has no heading with anchor #%s"
                        % (target, rel, anchor))

    def anchors(self, rel):
        if rel in self._headings:
            return self._headings[rel]
        text = self.read(rel) or ""
        seen = {}
        slugs = set()
        fence = None
        prev = ""
        for line in text.split("\n"):
            fence, in_code = _fence_step(fence, line)
            if in_code:
                prev = ""
                continue
            title = None
            h = HEADING_RE.match(line)
            if h:
                title = h.group(2)
            elif (SETEXT_RE.match(line) and prev.strip() and not HEADING_RE.match(prev)
                  and not re.match(r"^\s*([-*+>|]|\d+[.)])", prev)):
                title = prev
            for a in HTML_ANCHOR_RE.findall(line):
                slugs.add(a)
            prev = line
            if title is None:
                continue
            base = github_slug(title)
            k = seen.get(base, 0)
            seen[base] = k + 1
            slugs.add(base if k == 0 else "%s-%d" % (base, k))
        self._headings[rel] = slugs
        return slugs


# ---------------------------------------------------------------------------------------------
# Helpers

def _fence_step(fence, line):
    """Tracks fenced code blocks: returns (open fence or None, whether this line is code)."""
    m = FENCE_RE.match(line)
    if fence is None:
        if m:
            return m.group(1), True
        return None, False
    if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
            and not line.strip()[len(m.group(1)):].strip():
        return None, True
    return fence, True


def _blank_code(text):
    """Blanks fenced code blocks and inline code spans, keeping every line and column."""
    out = []
    fence = None
    for line in text.split("\n"):
        fence, in_code = _fence_step(fence, line)
        out.append("" if in_code else line)
    joined = "\n".join(out)
    return CODE_SPAN_RE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), joined)


def _line_starts(text):
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def _line_of(starts, pos):
    lo, hi = 0, len(starts)
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        if starts[mid] <= pos:
            lo = mid
        else:
            hi = mid
    return lo + 1


def github_slug(title):
    """GitHub's heading anchor: the heading's text, lowercased, punctuation dropped."""
    t = title
    t = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", t)        # images: their alt text
    t = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", t)         # links: their text
    t = re.sub(r"\[([^\]]*)\]\[[^\]]*\]", r"\1", t)
    t = re.sub(r"<[^>]+>", "", t)                          # html tags
    t = re.sub(r"(?<!\w)_{1,2}(\S(?:.*?\S)?)_{1,2}(?!\w)", r"\1", t)  # _emphasis_
    t = t.lower()
    keep = []
    for ch in t:
        cat = unicodedata.category(ch)
        if ch in " -" or cat[0] in "LMN" or cat == "Pc":
            keep.append(ch)
    return "".join(keep).replace(" ", "-")


# ---------------------------------------------------------------------------------------------
# Self-test

# The words the language check looks for, spelt so that this file itself passes the language grep.
_SES = "ses" + "sion"
_PASS = "third" + " pass"

SELF_TEST_FILES = {
    "README.md": (
        "# Demo\n"
        "See [the design](docs/design.md), [its part](docs/design.md#the-pools-part),\n"
        "[the second one](docs/design.md#same-1) and [here](#demo).\n"
        "A [missing page](docs/nope.md) and a [bad anchor](docs/design.md#no-such-heading).\n"
        "Not links: `[x](nope.md)` and [web](https://example.com/P9) and [m](mailto:a@b).\n"
        "```\n[in code](missing.md)\nstep 4 in a code block is still a bare step\n```\n"
        "[ref]: docs/design.md#same\n"
        "[badref]: docs/gone.md\n"
        "A long line in this " + _SES + ".\n"
    ),
    "docs/design.md": (
        "# Design\n"
        "## The pool's part\n"
        "## Same\n"
        "## Same\n"
        "Protocol steps P1-P3, W1, P2w; a p99 latency, L3, x86_64, E0502, 0x1F, the W1 ->\n"
        "ranges P1-P9 and W1-P2; the " + _PASS + "; an undefined P8 and bare Step 12.\n"
    ),
    "docs/observability.md": "The protocol has these steps\n1. **Q1** is no definition here.\n",
    "docs/benchmarks.md": "".join("line %d\n" % i for i in range(301)),
    "docs/benchmarks-history.md": "old\n",
    "crates/demo/src/pool/README.md": (
        "# Pool\n"
        "## Push\n"
        "1. **P1** Hand over.\n"
        "2. **P2** Queue.\n"
        "3. **P3** Tell.\n"
        "**P2w** Again.\n"
        "## Worker\n"
        "1. **W1** Arrive.\n"
        "2. **W3** Skip.\n"
        "## Pull\n"
        "1. **W2** Withdraw.\n"
        "2. **P3** Again.\n"
        "S1. **Ticket.**\n"
        "It follows P1 (2, 3), unlike `f(4)` or O(1).\n"
        "## Fork\n"
        "1. **K1** Count.\n"
    ),
    "crates/demo/src/queue/README.md": (
        "# Queue\n"
        "1. **K2** Start afresh: K1, K2 and [this](#queue), not [that](#fork).\n"
    ),
    "crates/demo/src/lib.rs": (
        "//! The demo crate: [pool](pool/README.md#push), [bad](pool/README.md#pull-x),\n"
        "//! [gone](../../missing/README.md), [`Foo`](crate::Foo), [`Bar`].\n"
        "/// Takes P1 then P2 (steps P1-P3). See docs/benchmarks-history.md.\n"
        "fn demo() {} // Step 4; a " + _SES + "; https://example.com/step-4/P9\n"
        "// As the README's steps\n"
        "// 2 and 3 say; f(2) and (7) are fine here.\n"
    ),
    "crates/demo/src/big.rs": "".join("// %d\n" % i for i in range(601)),
    "crates/demo/src/tests/big.rs": "".join("// %d\n" % i for i in range(601)),
}

# (path, line, a piece of the message)
SELF_TEST_EXPECTED = [
    ("README.md", 4, "docs/nope.md: no such file"),
    ("README.md", 4, "has no heading with anchor #no-such-heading"),
    ("README.md", 8, "bare numbered step 'step 4'"),
    ("README.md", 11, "docs/gone.md: no such file"),
    ("README.md", 12, "'%s'" % _SES),
    ("crates/demo/src/lib.rs", 1, "has no heading with anchor #pull-x"),
    ("crates/demo/src/lib.rs", 2, "../../missing/README.md: no such file"),
    ("crates/demo/src/lib.rs", 3, "names docs/benchmarks-history.md"),
    ("crates/demo/src/lib.rs", 4, "bare numbered step 'Step 4'"),
    ("crates/demo/src/lib.rs", 4, "'%s'" % _SES),
    ("crates/demo/src/pool/README.md", 11, "prefix W is used by two protocols of this file"),
    ("crates/demo/src/pool/README.md", 8, "steps W are not numbered W1..W3"),
    ("crates/demo/src/pool/README.md", 12, "step P3 is defined twice"),
    ("crates/demo/src/pool/README.md", 13, "step S1 is not written as a bold id"),
    ("crates/demo/src/pool/README.md", 13, "S1: the prefix S names no protocol"),
    ("crates/demo/src/pool/README.md", 14, "bare step number '(2, 3)'"),
    ("crates/demo/src/lib.rs", 5, "bare numbered step 'step(s) 2' (over two lines)"),
    ("crates/demo/src/queue/README.md", 2, "prefix K is used by two protocols: "
     "crates/demo/src/pool/README.md and crates/demo/src/queue/README.md"),
    ("crates/demo/src/queue/README.md", 2, "link #fork: crates/demo/src/queue/README.md has no "
     "heading with anchor #fork"),
    ("docs/benchmarks-history.md", 1, "this page is removed"),
    ("docs/benchmarks.md", 1, "301 lines, at most 300"),
    ("docs/design.md", 6, "range P1-P9 cites undefined steps P4, P5, P6, P7, P8, P9"),
    ("docs/design.md", 6, "'%s'" % _PASS),
    ("docs/design.md", 6, "P8 names no defined step"),
    ("docs/design.md", 6, "bare numbered step 'Step 12'"),
    ("crates/demo/src/big.rs", 1, "601 lines, at most 600"),
]


def self_test():
    expected = list(SELF_TEST_EXPECTED)
    with tempfile.TemporaryDirectory() as tmp:
        for rel, body in SELF_TEST_FILES.items():
            full = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(body)
        # Sizes are checked under crates/podq/src only: put the big files there too.
        for rel in ("crates/demo/src/big.rs", "crates/demo/src/tests/big.rs"):
            dest = os.path.join(tmp, rel.replace("crates/demo", "crates/podq"))
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with open(dest, "w", encoding="utf-8") as f:
                f.write(SELF_TEST_FILES[rel])
        expected = [(p.replace("crates/demo/src/big.rs", "crates/podq/src/big.rs"), l, s)
                    for p, l, s in expected]
        c = Checker(tmp)
        problems = c.run()
    failures = []
    unmatched = list(problems)
    for path, line, piece in expected:
        hit = [p for p in unmatched if p[0] == path and p[1] == line and piece in p[2]]
        if not hit:
            failures.append("not caught: %s:%d: ...%s..." % (path, line, piece))
        else:
            unmatched.remove(hit[0])
    for path, line, msg in unmatched:
        failures.append("unexpected: %s:%d: %s" % (path, line, msg))
    want_defined = {"P1", "P2", "P3", "P2w", "W1", "W3", "W2", "K1", "K2"}
    if set(c.defined) != want_defined:
        failures.append("defined steps %s, expected %s" % (sorted(c.defined), sorted(want_defined)))
    if github_slug("The `foo_bar` part: *why* (and [how](x.md))!") != "the-foo_bar-part-why-and-how":
        failures.append("slug: %r" % github_slug("The `foo_bar` part: *why* (and [how](x.md))!"))
    if failures:
        for f in failures:
            print("self-test: " + f)
        print("self-test FAILED (%d)" % len(failures))
        return 1
    print("self-test passed: %d problems caught, %d defined steps, %d citations, %d links"
          % (len(problems), len(c.defined), c.citations, c.links))
    return 0


def main(argv):
    if "--self-test" in argv[1:]:
        return self_test()
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    c = Checker(root)
    problems = c.run()
    for path, line, msg in problems:
        print("%s:%d: %s" % (path, line, msg))
    if problems:
        print("docs check: %d problems (%d defined steps, %d step citations, %d links checked)"
              % (len(problems), len(c.defined), c.citations, c.links))
        return 1
    print("docs check passed: %d defined steps, %d step citations, %d links checked"
          % (len(c.defined), c.citations, c.links))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
