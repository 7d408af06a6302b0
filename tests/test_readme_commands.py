"""Every command in README.md runs as a new user would run it, so the docs cannot rot.

Each ```bash block is split into commands (a line, its `\\` continuations,
a heredoc with its body); every command runs with bash, in document order,
in one scratch folder that holds links to the repository's files (so
`programs/...` resolves and files a command writes stay out of the
checkout) and to `../shared`, with this interpreter's environment first on
the PATH and as `.venv`. A command passes when it exits with status 0, or
with the status its comment names ("exit status 1"). Each ```python block
runs as one script the same way, and in any other block each line
`$ command` (a shell transcript) runs as a command.

A block may carry a marker the line before it, `<!-- readme-test: TAGS -->`,
for what a test cannot do as written; the tags change how a command runs,
never whether it runs:
  installed     the block's `python3 -m venv .venv` and
                `.venv/bin/pip install -e '.[test]'` steps are the install
                this suite already runs in (CI makes exactly it): the test
                checks the steps are those and runs the rest of each command
  collect-only  a `pytest` command is the suite now running this test: it
                runs with --collect-only (the suite must load)
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import REPO

README = REPO / "README.md"
TAGS = {"installed", "collect-only"}
INSTALL_STEPS = ("python3 -m venv .venv", ".venv/bin/pip install -e '.[test]'")
_MARK = re.compile(r"<!--\s*readme-test:\s*(.*?)\s*-->")
_HEREDOC = re.compile(r"<<-?\s*'?\"?(\w+)'?\"?")


@dataclass
class Command:
    line: int            # README line of its first line
    lang: str            # 'bash' | 'python'
    text: str            # as written
    tags: frozenset

    @property
    def expected_status(self) -> int:
        m = re.search(r"exit status (\d+)", self.text)
        return int(m.group(1)) if m else 0

    def runnable(self) -> str:
        """The text to run: as written, less what the block's tags say."""
        text = self.text
        if "installed" in self.tags:
            steps = [s.strip() for s in text.split("&&")]
            install = [s for s in steps if s in INSTALL_STEPS]
            assert install == list(INSTALL_STEPS), (
                f"README.md:{self.line}: 'installed' block must start with "
                f"{' && '.join(INSTALL_STEPS)}")
            text = " && ".join(s for s in steps if s not in INSTALL_STEPS)
        if "collect-only" in self.tags and re.search(r"-m pytest\b", text):
            text = re.sub(r"(-m pytest\b)", r"\1 --collect-only", text)
        return text


def blocks(text: str) -> list:
    """(first body line number, language, body lines, tags) of each fenced block."""
    lines = text.splitlines()
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        prev = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        mark = _MARK.search(prev)
        tags = frozenset(t.strip() for t in re.split(r"[;,\s]+", mark.group(1)) if t.strip()) if mark else frozenset()
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        out.append((i + 2, m.group(1), lines[i + 1:j], tags))
        i = j + 1
    return out


def split_bash(first: int, body: list, tags: frozenset) -> list:
    """The commands of one bash block; comment-only lines belong to the command above."""
    cmds: list = []
    i = 0
    while i < len(body):
        line = body[i]
        if not line.strip():
            i += 1
            continue
        if line.lstrip().startswith("#"):
            if cmds:
                cmds[-1].text += "\n" + line
            i += 1
            continue
        start, text = i, line
        while text.rstrip().endswith("\\") and i + 1 < len(body):
            i += 1
            text += "\n" + body[i]
        m = _HEREDOC.search(text)
        if m:
            end = m.group(1)
            while i + 1 < len(body) and body[i].strip() != end:
                i += 1
                text += "\n" + body[i]
        cmds.append(Command(first + start, "bash", text, tags))
        i += 1
    return cmds


# Fence languages: bash and python blocks run; in any other block a line
# "$ command" is a shell transcript and its command runs too.
LANGUAGES = {"bash", "python", "text", "json", "c", "cuda", ""}


def transcript_commands(first: int, body: list, tags: frozenset) -> list:
    """The '$ command' lines (with their continuations) of a transcript block."""
    cmds, i = [], 0
    while i < len(body):
        if body[i].startswith("$ "):
            start, text = i, body[i][2:]
            while text.rstrip().endswith("\\") and i + 1 < len(body):
                i += 1
                text += "\n" + body[i]
            cmds.append(Command(first + start, "bash", text, tags))
        i += 1
    return cmds


def readme_commands() -> list:
    cmds = []
    for first, lang, body, tags in blocks(README.read_text()):
        if lang == "bash":
            cmds += split_bash(first, body, tags)
        elif lang == "python":
            cmds.append(Command(first, "python", "\n".join(body), tags))
        else:
            cmds += transcript_commands(first, body, tags)
    return cmds


COMMANDS = readme_commands()


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    """A folder that looks like a fresh checkout to the README's commands."""
    root = tmp_path_factory.mktemp("readme")
    work = root / "gpuemu"
    work.mkdir()
    for entry in REPO.iterdir():
        if entry.name not in (".git", ".venv"):
            (work / entry.name).symlink_to(entry)
    if (Path(sys.prefix) / "pyvenv.cfg").is_file():     # the virtual environment we run in
        (work / ".venv").symlink_to(Path(sys.prefix))
    else:
        (work / ".venv").mkdir()
        (work / ".venv" / "bin").symlink_to(Path(sys.executable).parent)
    shared = REPO.parent / "shared"
    if shared.is_dir():
        (root / "shared").symlink_to(shared)
    return work


def _id(c: Command) -> str:
    first = c.text.strip().splitlines()[0]
    return f"README.md:{c.line}:{first[:50]}"


def test_readme_has_commands_to_run():
    langs = [c.lang for c in COMMANDS]
    assert langs.count("bash") >= 10 and "python" in langs


def test_every_block_language_is_one_the_test_reads():
    # a ```sh or ```console block would hide its commands from this test
    for first, lang, _, _ in blocks(README.read_text()):
        assert lang in LANGUAGES, f"README.md:{first}: use ```bash (run) or ```text, not ```{lang}"


def test_transcripts_run_their_dollar_lines():
    cmds = transcript_commands(10, ["$ gpuemu info archs", "output", "$ a \\", "  b"], frozenset())
    assert [(c.line, c.text) for c in cmds] == [(10, "gpuemu info archs"), (12, "a \\\n  b")]


def test_markers_use_known_tags():
    for first, _, _, tags in blocks(README.read_text()):
        assert tags <= TAGS, f"README.md:{first}: unknown readme-test tags {sorted(tags - TAGS)}"


def test_continuations_and_heredocs_stay_in_one_command():
    cmds = split_bash(1, ["a \\", "  b  # c", "# note: exit status 1", "cat > f <<'EOF'", "x", "EOF", "d"],
                      frozenset())
    assert [c.text.splitlines()[0] for c in cmds] == ["a \\", "cat > f <<'EOF'", "d"]
    assert cmds[0].expected_status == 1 and cmds[1].text.endswith("EOF")


def test_install_steps_are_checked_and_dropped():
    c = Command(1, "bash", "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && "
                           ".venv/bin/python -m pytest -q", frozenset({"installed", "collect-only"}))
    assert c.runnable() == ".venv/bin/python -m pytest --collect-only -q"


@pytest.mark.parametrize("cmd", COMMANDS, ids=_id)
def test_readme_command_runs(cmd, sandbox):
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("GPUEMU_CACHE_DIR", str(sandbox.parent / "kcache"))
    if cmd.lang == "python":
        argv = [sys.executable, "-c", cmd.runnable()]
    else:
        argv = ["bash", "-c", "set -o pipefail\n" + cmd.runnable()]
    r = subprocess.run(argv, cwd=sandbox, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == cmd.expected_status, (
        f"README.md:{cmd.line} exited {r.returncode}, expected {cmd.expected_status}\n"
        f"$ {cmd.text}\n--- stdout\n{r.stdout[-3000:]}\n--- stderr\n{r.stderr[-3000:]}")
