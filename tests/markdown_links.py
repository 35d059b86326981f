"""The relative links of a Markdown file, and those that lead nowhere: a missing file, a line
anchor (`#L12`) past the file's end, or an anchor in the same page that no heading or
`<a id>` defines. Links to other sites are not followed."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1", re.M | re.S)
CODE = re.compile(r"(`+).*?\1", re.S)
LINE = re.compile(r"L(\d+)")


def links(text: str) -> list[str]:
    """The link targets outside code (a code block may show `](` as text)."""
    prose = CODE.sub("", FENCE.sub("", text))
    return [target for target in LINK.findall(prose) if not re.match(r"[a-z][a-z0-9+.-]*:", target)]


def anchors(text: str) -> set[str]:
    """The anchors a page defines: explicit ids and GitHub's slugs of its headings."""
    found = set(re.findall(r'<a id="([^"]+)"></a>', text))
    for heading in re.findall(r"^#+\s+(.*)$", text, re.M):
        found.add(re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-"))
    return found


def broken_links(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    broken = []
    for target in links(text):
        path, _, anchor = unquote(target).partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{page.name}: {target}: no such file")
        elif (line := LINE.fullmatch(anchor)) is not None:
            if file.is_dir() or int(line.group(1)) > len(file.read_text(encoding="utf-8").splitlines()):
                broken.append(f"{page.name}: {target}: past the end of the file")
        elif anchor and not path and anchor not in anchors(text):
            broken.append(f"{page.name}: {target}: no such anchor")
    return broken
