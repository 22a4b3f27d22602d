"""Python string literals as the fixers edit them: each character (or escape, or replacement field)
of a literal as an atom that knows where it is written, and text written back as literal source."""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass

import libcst as cst

# How one character of a non-raw literal can be written (`\N{...}` included); anything else is
# itself, and an unknown escape (`\d`) is the backslash and the letter.
_ESCAPE = re.compile(
    r"\\(?:\r\n|[\n\r\\'\"abfnrtv]|[0-7]{1,3}|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|N\{[^}\n]*\})"
)


@dataclass(frozen=True)
class Token:
    """One string literal token: where it and its body (between the quotes) are in the file."""

    node: cst.SimpleString | cst.FormattedString
    start: int
    end: int
    prefix: str  # lower-case, e.g. "", "f", "rf"
    quote: str  # ', ", ''' or """

    @property
    def body_start(self) -> int:
        return self.start + len(self.prefix) + len(self.quote)

    @property
    def body_end(self) -> int:
        return self.end - len(self.quote)

    @property
    def is_f(self) -> bool:
        return "f" in self.prefix

    @property
    def is_raw(self) -> bool:
        return "r" in self.prefix

    @property
    def triple(self) -> bool:
        return len(self.quote) == 3


@dataclass(frozen=True)
class Atom:
    """A piece of text as written in the source. `kind`: "text" (`text` is what it stands for),
    "field" (an f-string replacement field), "placeholder" (a `{name}` of a `.format` template) or
    "operand" (an expression added with `+`). `raw` is how it is written, at [start, end)."""

    kind: str
    text: str
    raw: str
    start: int
    end: int
    token: Token | None = None
    node: cst.CSTNode | None = None
    name: str = ""  # a placeholder's field name

    @property
    def is_space(self) -> bool:
        return self.kind == "text" and self.text.isspace()


def _decode_escape(raw: str) -> str:
    if raw in ("\\\n", "\\\r\n", "\\\r"):
        return ""  # a backslash at the end of a line continues the literal
    with warnings.catch_warnings():  # an unknown escape warns on some Pythons; it is still itself
        warnings.simplefilter("ignore")
        try:
            return ast.literal_eval('"' + raw + '"')  # parses one string literal, runs nothing
        except (ValueError, SyntaxError):  # `\N{no such name}`
            return raw


def _chars(raw: str, start: int, token: Token, braces: bool) -> list[Atom]:
    """The atoms of literal text `raw` written at offset `start` (`{{`/`}}` are one brace when
    `braces`: f-string text)."""
    out: list[Atom] = []
    i = 0
    while i < len(raw):
        if not token.is_raw and raw[i] == "\\" and (m := _ESCAPE.match(raw, i)):
            piece, text = m.group(0), _decode_escape(m.group(0))
        elif not token.is_raw and raw[i] == "\\" and i + 1 < len(raw):
            piece, text = raw[i : i + 2], raw[i : i + 2]
        elif braces and raw[i] in "{}" and raw[i : i + 2] in ("{{", "}}"):
            piece, text = raw[i : i + 2], raw[i]
        elif raw[i] == "\r" and raw[i : i + 2] == "\r\n":
            piece, text = "\r\n", "\n"  # a triple-quoted literal's line break reads as "\n"
        else:
            piece, text = raw[i], raw[i]
        out.append(Atom("text", text, piece, start + i, start + i + len(piece), token))
        i += len(piece)
    return out


def token_atoms(
    node: cst.SimpleString | cst.FormattedString, start: int, code: str
) -> tuple[Token, list[Atom]]:
    """The token `node`, written as `code` at offset `start`, and its atoms."""
    if isinstance(node, cst.SimpleString):
        prefix, quote = node.prefix.lower(), node.quote
    else:
        prefix, quote = node.prefix.lower(), node.end
    token = Token(node, start, start + len(code), prefix, quote)
    if isinstance(node, cst.SimpleString):
        return token, _chars(
            code[token.body_start - start : token.body_end - start], token.body_start, token, False
        )
    atoms: list[Atom] = []
    at = token.body_start
    for part in node.parts:
        if isinstance(part, cst.FormattedStringText):
            atoms += _chars(part.value, at, token, True)
            at += len(part.value)
        else:
            raw = cst.Module([]).code_for_node(part)
            atoms.append(Atom("field", "", raw, at, at + len(raw), token, part))
            at += len(raw)
    return token, atoms


def placeholders(atoms: list[Atom]) -> list[Atom] | None:
    """The atoms of a `str.format` template: `{{`/`}}` one brace, each `{field}` one placeholder
    atom; None when the braces do not make a template."""
    out: list[Atom] = []
    i = 0
    while i < len(atoms):
        a = atoms[i]
        nxt = atoms[i + 1] if i + 1 < len(atoms) else None
        if a.text in "{}" and a.kind == "text" and a.text and nxt is not None and nxt.text == a.text:
            out.append(Atom("text", a.text, a.raw + nxt.raw, a.start, nxt.end, a.token))
            i += 2
            continue
        if a.text == "}":
            return None
        if a.text != "{":
            out.append(a)
            i += 1
            continue
        depth, j = 0, i
        while j < len(atoms):
            depth += {"{": 1, "}": -1}.get(atoms[j].text, 0)
            if depth == 0:
                break
            j += 1
        if j == len(atoms) or any(x.token is not a.token for x in atoms[i : j + 1]):
            return None
        field = "".join(x.text for x in atoms[i + 1 : j])
        name = re.split(r"[!:.\[]", field, maxsplit=1)[0].strip()
        raw = "".join(x.raw for x in atoms[i : j + 1])
        out.append(Atom("placeholder", "", raw, a.start, atoms[j].end, a.token, name=name))
        i = j + 1
    return out


def encode(atoms: list[Atom], quote: str, raw: bool = False, braces: bool = True) -> str | None:
    """The atoms written as the body of a literal quoted with `quote` (fields and placeholders as
    they were written); None when they cannot be (a field whose code holds the quote, a backslash
    or a line break a single-quoted literal cannot hold)."""
    triple = len(quote) == 3
    out: list[str] = []
    chars = "".join(a.text for a in atoms if a.kind == "text")
    seen = 0  # characters of text written so far
    for a in atoms:
        if a.kind in ("field", "placeholder"):
            if quote[0] in a.raw or (a.kind == "field" and "\\" in a.raw) or (not triple and "\n" in a.raw):
                return None
            out.append(a.raw)
            continue
        if a.kind != "text":
            return None
        for ch in a.text:
            if raw:
                if ch == quote[0] or ch == "\\" or (ch in "\r\n" and not triple):
                    return None
                out.append(ch)
            elif ch == "\\":
                out.append("\\\\")
            elif ch == quote[0] and (not triple or seen in (0, len(chars) - 1) or chars[seen + 1] == ch):
                # inside triple quotes, only a quote that could close them, or join ones beside it
                out.append("\\" + ch)
            elif ch == "\n":
                out.append("\n" if triple else "\\n")
            elif ch in "\r\t":
                out.append({"\r": "\\r", "\t": "\\t"}[ch])
            elif ord(ch) < 32 or ord(ch) == 127:
                out.append(f"\\x{ord(ch):02x}")
            elif braces and ch in "{}":
                out.append(ch * 2)
            else:
                out.append(ch)
            seen += 1
    return "".join(out)


def literal(atoms: list[Atom]) -> str | None:
    """A new literal holding the atoms: an f-string when they have fields, a plain string (a
    template) otherwise; double quotes unless a field needs the single ones."""
    has_fields = any(a.kind == "field" for a in atoms)
    braces = has_fields or any(a.kind == "placeholder" for a in atoms)
    for quote in ('"', "'"):
        body = encode(atoms, quote, braces=braces)
        if body is not None:
            return ("f" if has_fields else "") + quote + body + quote
    return None


def shown(atoms: list[Atom], limit: int = 60) -> str:
    """The atoms as a reader sees them in a message: the text, and each value as it is written."""
    text = "".join(a.raw if a.kind != "text" else a.text for a in atoms)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
