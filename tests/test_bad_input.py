"""Broken input never produces a traceback: each bad file is a one-line finding on that file (and
the run goes on with the others), each bad option or config is a one-line error with exit 2."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from conftest import run_prefixlint

from prefixlint import api
from prefixlint.api import Options, lint_paths

CLEAN = "{{ bos_token }}You are helpful.\n{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"


def _bad_tree(root: Path) -> dict[str, str]:
    """A folder of broken inputs beside one clean template; returns file → expected message part."""
    (root / "clean.jinja").write_text(CLEAN, encoding="utf-8")
    (root / "binary.jinja").write_bytes(b"\x00\x01\x02\xff binary")
    (root / "latin1.jinja").write_bytes(b"caf\xe9 {{ messages[0].content }}")
    (root / "loop").mkdir()
    os.symlink("b.jinja", root / "loop" / "a.jinja")
    os.symlink("a.jinja", root / "loop" / "b.jinja")
    os.symlink(".", root / "loop" / "self")  # a folder loop: not followed
    os.mkfifo(root / "fifo.jinja")  # reading it would block forever
    for name, text in {
        "broken": '{"chat_template": ',
        "number": '{"chat_template": 42}',
        "array": "[1, 2, 3]",
        "bad_list": '{"chat_template": [{"name": "x"}]}',
    }.items():
        (root / name).mkdir()
        (root / name / "tokenizer_config.json").write_text(text, encoding="utf-8")
    (root / "py2").mkdir()
    (root / "py2" / "old.py").write_text('import os\nprint "hello"\nSYSTEM = "x"\n', encoding="utf-8")
    return {
        "binary.jinja": "PFX001 template-syntax-error: cannot read: binary file",
        "latin1.jinja": "PFX001 template-syntax-error: cannot read: not UTF-8 text (byte 3)",
        "loop/a.jinja": "PFX001 template-syntax-error: cannot read: Too many levels of symbolic links",
        "loop/b.jinja": "PFX001 template-syntax-error: cannot read: Too many levels of symbolic links",
        "fifo.jinja": "PFX001 template-syntax-error: cannot read: not a regular file",
        "broken/tokenizer_config.json": "PFX001 template-syntax-error: tokenizer_config.json: not valid JSON",
        "number/tokenizer_config.json": "tokenizer_config.json: chat_template is a number (42), not a string",
        "array/tokenizer_config.json": "tokenizer_config.json: not a JSON object",
        "bad_list/tokenizer_config.json": "chat_template[0] is not a {name, template} object",
        "py2/old.py": "PFX003 python-syntax-error:",
    }


def test_every_bad_file_is_a_one_line_finding_and_the_run_goes_on(tmp_path: Path) -> None:
    expected = _bad_tree(tmp_path)
    proc = run_prefixlint("check", "--no-cache", "--no-multiturn", ".", cwd=tmp_path, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ""
    lines = proc.stdout.splitlines()
    for name, message in expected.items():
        found = [ln for ln in lines if ln.startswith(f"{name}:")]
        assert found and message in found[0], (name, found)
    assert any(ln.startswith("py2/old.py:2:") for ln in lines)  # Python 2 print: at its line
    report = json.loads(
        run_prefixlint("check", "--no-cache", "--no-multiturn", "--format", "json", ".", cwd=tmp_path).stdout
    )
    clean = [s for s in report["sources"] if s["path"] == "clean.jinja"]
    assert clean and clean[0]["total_tokens"], "the clean template beside the bad ones was not analysed"


def test_empty_files_are_analysed_without_error(tmp_path: Path) -> None:
    for name in ("empty.jinja", "empty.py", "blank.j2"):
        (tmp_path / name).write_text("" if name != "blank.j2" else "\n\n", encoding="utf-8")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "tokenizer_config.json").write_text("", encoding="utf-8")
    proc = run_prefixlint("check", "--no-cache", "--format", "json", ".", cwd=tmp_path)
    assert proc.stderr == "" and proc.returncode in (0, 1)
    codes = {d["path"]: d["code"] for d in json.loads(proc.stdout)["diagnostics"]}
    assert codes.get("empty/tokenizer_config.json") == "PFX001"  # empty is not valid JSON
    assert not any(p.startswith(("empty.", "blank.")) and c in ("PFX001", "PFX003") for p, c in codes.items())


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "secret.jinja"
    bad.write_text(CLEAN, encoding="utf-8")
    bad.chmod(0)
    if os.geteuid() == 0:  # root reads anything: make the read itself fail as it would for a user
        real_open = open

        def deny(file, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202 - mirrors open()
            if str(file) == str(bad):
                raise PermissionError(13, "Permission denied", str(file))
            return real_open(file, *args, **kwargs)

        monkeypatch.setattr("builtins.open", deny)
    [result] = lint_paths([str(bad)], Options(multiturn=False)).sources
    [diag] = result.diagnostics
    assert (diag.code, diag.span.line) == ("PFX001", 1)
    assert diag.message == "cannot read: Permission denied"


def test_read_text_refuses_non_regular_files_without_opening_them(tmp_path: Path) -> None:
    fifo = tmp_path / "t.jinja"
    os.mkfifo(fifo)

    def hung(signum: int, frame: object) -> None:
        raise TimeoutError("read_text opened the FIFO and blocked")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(5)  # without the check the open() blocks: fail, do not hang
    try:
        with pytest.raises(ValueError, match="not a regular file"):
            api.read_text(str(fifo))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    with pytest.raises(ValueError, match="is a folder"):
        api.read_text(str(tmp_path))


def test_tokenizer_that_is_not_one(tmp_path: Path) -> None:
    (tmp_path / "t.jinja").write_text(CLEAN, encoding="utf-8")
    fake = tmp_path / "tokenizer.json"
    fake.write_text('{"hello": "not a tokenizer"}', encoding="utf-8")
    proc = run_prefixlint("check", "--no-cache", "--tokenizer", str(fake), "t.jinja", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"prefixlint: error: {fake}: not a loadable tokenizer.json (")
    assert len(proc.stderr.splitlines()) == 1 and proc.stdout == ""
    # Beside the template (found automatically), a broken one does not stop the run: one warning
    # names it, and the embedded default is used.
    proc = run_prefixlint("check", "--no-cache", "--no-multiturn", "t.jinja", cwd=tmp_path)
    assert proc.returncode in (0, 1)
    assert proc.stderr.startswith("prefixlint: warning: tokenizer.json: not a loadable tokenizer.json (")
    assert len(proc.stderr.splitlines()) == 1


def test_missing_tokenizer(tmp_path: Path) -> None:
    (tmp_path / "t.jinja").write_text(CLEAN, encoding="utf-8")
    for spec, reason in (
        ("nope.json", "no such file or folder"),
        ("org/not-cached-model", "not a file or folder, and not in the local Hugging Face cache"),
        (".", "no tokenizer.json in this folder"),
    ):
        proc = run_prefixlint(
            "check",
            "--no-cache",
            "--tokenizer",
            spec,
            "t.jinja",
            cwd=tmp_path,
            env={"HF_HUB_CACHE": str(tmp_path / "hub")},
        )
        assert proc.returncode == 2, spec
        assert proc.stderr == f"prefixlint: error: {spec}: {reason}\n"


def test_config_with_unknown_keys(tmp_path: Path) -> None:
    (tmp_path / "t.jinja").write_text(CLEAN, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.prefixlint]\nselect = ["PFX1"]\nbogus-key = 1\n', encoding="utf-8"
    )
    proc = run_prefixlint("check", "--no-cache", "t.jinja", cwd=tmp_path)
    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr
    assert "pyproject.toml" in proc.stderr and "bogus-key" in proc.stderr


def test_render_command_on_bad_input(tmp_path: Path) -> None:
    (tmp_path / "bin.jinja").write_bytes(b"\x00\x00")
    (tmp_path / "big.jinja").write_bytes(b"x")
    os.truncate(tmp_path / "big.jinja", 64 << 20)
    for name in ("bin.jinja", "big.jinja"):
        proc = run_prefixlint("render", name, cwd=tmp_path)
        assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
        assert proc.stderr.startswith(f"prefixlint: error: {name}: ")


@pytest.mark.parametrize(
    ("source", "line"), [("{% break %}", 1), ("a\nb\n{% if x %}\n{% continue %}{% endif %}", 4)]
)
def test_python_syntax_error_in_generated_code_is_pfx001(tmp_path: Path, source: str, line: int) -> None:
    # Jinja accepts `{% break %}` outside a loop and emits Python that does not compile (found by fuzzing).
    path = tmp_path / "t.jinja"
    path.write_text(source, encoding="utf-8")
    [result] = lint_paths([str(path)], Options(multiturn=False)).sources
    [diag] = result.diagnostics
    assert (diag.code, diag.span.line) == ("PFX001", line)
    assert "outside loop" in diag.message or "not properly in loop" in diag.message
