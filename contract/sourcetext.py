"""Text from a counterexample (execution ids, flow and step names, explanations) inside the
source `loomcheck repro` generates: run/repro.py's repro.py and repro.sh, and every peer
translation in adapters/scripts/. A value a script computes with goes in as a literal
(`repr()`); a value a comment or a docstring shows goes through `escaped()` here, so no id can
end the comment or the string it stands in and have the rest of it run as code."""

from __future__ import annotations


def escaped(text: str) -> str:
    """`text` as it may stand after `#` (Python or sh) or inside a triple-double-quoted string.

    Read as a string literal's body it is `text` again. A backslash is doubled. Every character
    `str.isprintable()` refuses is written as its Python escape: the line ends of Python's
    tokenizer (CR, LF) and of editors and other languages (U+2028, U+2029, U+0085, form feed,
    vertical tab), NUL (which `compile()` rejects), a lone surrogate (which UTF-8 cannot encode,
    written `\\ud800`), and bidirectional controls. A double quote is escaped when it follows
    one or ends the text, so no run of three closes a docstring early and none touches the
    closing quotes; a lone quote stays as it is, for the reader."""
    out = []
    for at, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char == '"' and (at + 1 == len(text) or text[at - 1 : at] == '"'):
            out.append('\\"')
        elif char.isprintable():
            out.append(char)
        else:
            out.append(ascii(char)[1:-1])  # \r, \x00, \u2028, \ud800, \U000e0001 ...
    return "".join(out)
