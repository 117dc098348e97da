"""The shell blocks of the guides (docs/guides/*.md), run in order in one bash shell per guide.

What runs: every fenced block whose language is `sh`, `bash` or `console`. Any other fence language
(`text`, `ini`, `python`, ...) is for reading only. In a `sh`/`bash` block, a comment line

    # => some text

asserts that what the commands since the previous assertion printed contains `some text` (white space
ignored, so `"status": "paid"` matches the API's compact `"status":"paid"`). In a `console` block, lines
starting with `$ ` are commands (a trailing backslash continues one) and the lines after a command are
text its output must contain.

Besides a non-zero exit (the shell runs with `set -euo pipefail`), a part whose output holds an error
answer (`"error":`, the API's envelope or an OAuth error) fails, unless one of its assertions names the
error: a guide that drifts from the code fails instead of printing an error a reader would trip on.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

RUNNABLE = {"sh", "bash", "console"}
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,})(?P<language>[\w+-]*)[^\n]*$")
EXPECT = re.compile(r"^\s*# => ?(?P<text>.*)$")
# an answer that is an error: the API's envelope, or an OAuth error
ERROR_ANSWER = re.compile(r"\{\s*\"error\"\s*:")
MARK = "\x1e"  # separates the parts' outputs: a character no answer prints


@dataclass
class Part:
    """Commands and what their output must contain."""

    commands: list[str] = field(default_factory=list)
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    number: int  # 1-based, among the guide's runnable blocks
    line: int  # where the block starts in the guide (1-based)
    language: str
    parts: list[Part]


def fenced_blocks(markdown: str) -> list[tuple[int, str, str]]:
    """(line, language, text) of every fenced block, in order."""
    found: list[tuple[int, str, str]] = []
    lines = markdown.splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, ticks = opening["indent"], opening["ticks"]
        body: list[str] = []
        index += 1
        while index < len(lines) and not (
            lines[index].strip().startswith(ticks) and lines[index].strip().strip("`") == ""
        ):
            line = lines[index]
            body.append(line[len(indent) :] if line.startswith(indent) else line.lstrip())
            index += 1
        found.append((index - len(body), opening["language"].lower(), "\n".join(body)))
        index += 1
    return found


def shell_parts(text: str) -> list[Part]:
    parts = [Part()]
    for line in text.splitlines():
        expected = EXPECT.match(line)
        if expected is not None:
            parts[-1].expected.append(expected["text"].strip())
            continue
        if parts[-1].expected:  # a command after an assertion starts the next part
            parts.append(Part())
        parts[-1].commands.append(line)
    return [part for part in parts if part.commands or part.expected]


def console_parts(text: str) -> list[Part]:
    parts: list[Part] = []
    continued = False
    for line in text.splitlines():
        if continued:
            parts[-1].commands.append(line)
        elif line.startswith("$ "):
            parts.append(Part(commands=[line[2:]]))
        elif line.strip() and parts:
            parts[-1].expected.append(line.strip())
        continued = bool(parts) and line.rstrip().endswith("\\") and bool(parts[-1].commands)
    return parts


def runnable_blocks(markdown: str) -> list[Block]:
    blocks: list[Block] = []
    for line, language, text in fenced_blocks(markdown):
        if language not in RUNNABLE:
            continue
        parts = console_parts(text) if language == "console" else shell_parts(text)
        blocks.append(Block(len(blocks) + 1, line, language, parts))
    return blocks


def script_for(blocks: list[Block]) -> str:
    """One bash script: each part's commands behind a marker that names it, then an end marker."""
    lines = ["set -euo pipefail"]
    for block in blocks:
        for number, part in enumerate(block.parts):
            lines.append(f"printf '\\n{MARK}{block.number}.{number} %s{MARK}\\n' \"$(date +%s.%N)\"")
            lines.extend(part.commands)
            lines.append("")  # a part may end in a comment or a continued line's end
    lines.append(f"printf '\\n{MARK}end %s{MARK}\\n' \"$(date +%s.%N)\"")
    return "\n".join(lines) + "\n"


def squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


@dataclass
class Outcome:
    ran: list[str]  # the parts that started, as "block.part"
    finished: bool  # the end marker was printed: every block ran to its end
    returncode: int | None
    outputs: dict[str, str]
    timed_out: bool
    seconds: dict[str, float]  # how long each part that finished took


def run_script(script: str, cwd: Path, env: dict[str, str], timeout: float) -> Outcome:
    with tempfile.NamedTemporaryFile("w", suffix=".sh", dir=cwd, delete=False) as file:
        file.write(script)
    output_path = Path(file.name).with_suffix(".out")
    timed_out = False
    try:
        with output_path.open("wb") as output:
            process = subprocess.Popen(
                ["bash", "--noprofile", "--norc", file.name],
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its children too can be stopped on a timeout
            )
            try:
                returncode: int | None = process.wait(timeout)
            except subprocess.TimeoutExpired:
                timed_out, returncode = True, None
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        text = output_path.read_text(errors="replace")
    finally:
        Path(file.name).unlink(missing_ok=True)
        output_path.unlink(missing_ok=True)
    pieces = text.split(MARK)
    outputs: dict[str, str] = {}
    ran: list[str] = []
    started: list[float] = []
    for index in range(1, len(pieces) - 1, 2):
        name, _, when = pieces[index].partition(" ")
        ran.append(name)
        started.append(float(when))
        outputs[name] = pieces[index + 1].strip("\n")
    seconds = {name: round(started[i + 1] - started[i], 2) for i, name in enumerate(ran[:-1])}
    finished = bool(ran) and ran[-1] == "end"
    return Outcome([name for name in ran if name != "end"], finished, returncode, outputs, timed_out, seconds)


def problems(blocks: list[Block], outcome: Outcome, guide: str) -> list[str]:
    """What went wrong, each naming the block by its line in the guide; empty when all is well."""
    found: list[str] = []
    where = {f"{block.number}.{index}": block for block in blocks for index in range(len(block.parts))}
    for name in outcome.ran:
        block, part = where[name], where[name].parts[int(name.split(".")[1])]
        output = outcome.outputs.get(name, "")
        label = f"{guide}: the block at line {block.line}"
        for text in part.expected:
            if squeezed(text) not in squeezed(output):
                found.append(f"{label} should print {text!r}; it printed:\n{output[-3000:]}")
        mentions_error = any("error" in text for text in part.expected)
        if ERROR_ANSWER.search(output) and not mentions_error:
            found.append(f"{label} answered an error:\n{output[-3000:]}")
    if not outcome.finished:
        last = where[outcome.ran[-1]] if outcome.ran else blocks[0]
        reason = "timed out" if outcome.timed_out else f"exited with {outcome.returncode}"
        tail = outcome.outputs.get(outcome.ran[-1], "") if outcome.ran else ""
        found.append(f"{guide}: the block at line {last.line} {reason}; its output:\n{tail[-3000:]}")
        slowest = sorted(outcome.seconds.items(), key=lambda item: -item[1])[:3]
        if slowest:
            found.append(
                "the slowest parts before it: "
                + ", ".join(f"line {where[name].line} {took} s" for name, took in slowest)
            )
    return found


def run_guide(
    path: Path, cwd: Path, env: dict[str, str], timeout: float = 240
) -> tuple[list[Block], Outcome]:
    blocks = runnable_blocks(path.read_text())
    return blocks, run_script(script_for(blocks), cwd, env, timeout)
