"""README.md's own model code, read from README.md itself, so that the tests that run it
and the document cannot drift apart."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_blocks() -> list[str]:
    """The Python code blocks of README's section "A model in 40 lines": the model
    (``flock.py``), then the PettingZoo use of it."""
    text = README.read_text()
    section = text.split("## A model in 40 lines", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def readme_commands() -> list[str]:
    """The ``seer`` command lines of that section's shell block, comments dropped."""
    text = README.read_text()
    section = text.split("## A model in 40 lines", 1)[1].split("\n## ", 1)[0]
    shell = re.findall(r"```sh\n(.*?)```", section, re.S)[0]
    return [line.split("#", 1)[0].strip() for line in shell.splitlines()
            if line.startswith("seer ")]


def write_flock(folder: Path) -> Path:
    """README's model as ``folder/flock.py`` (as README tells a reader to save it) and its
    PettingZoo block as ``folder/flock_env.py``; returns ``folder``."""
    model, env = readme_blocks()[:2]
    (folder / "flock.py").write_text(model)
    (folder / "flock_env.py").write_text(env)
    return folder
