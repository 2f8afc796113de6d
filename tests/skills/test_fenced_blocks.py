"""The page runner itself (tests/_support/fenced_blocks.py): it must catch a wrong exit code, a shown line
that is not printed, a marked command that does not parse, and a translation whose commands drifted."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from _support import fenced_blocks

PAGE = """# A page

Text with `inline code` that is not run.

```bash
# a comment line is skipped
printf 'alpha\\nbeta 2026-12-03 08:00\\ngamma   delta\\n'
```
```output
alpha
...
beta ...
gamma delta
```

```bash
false   # exit 1: a stated failure
printf 'one' \\
  'two'   # exit 0
exit 3 # exit 3
some-cluster-tool --nodes 4   # needs: cluster
```

```python
print("not a shell block")
```
"""


def test_commands_markers_and_output(tmp_path: Path) -> None:
    cmds = fenced_blocks.commands(PAGE, "page.md")
    assert [c.text.split()[0] for c in cmds] == ["printf", "false", "printf", "exit", "some-cluster-tool"]
    assert [c.exit_code for c in cmds] == [0, 1, 0, 3, 0]
    assert [c.needs for c in cmds] == [None, None, None, None, "cluster"]
    assert cmds[0].line == 7 and cmds[0].output == ("alpha", "...", "beta ...", "gamma delta")
    assert cmds[2].words() == ["printf", "one", "two"]
    results = fenced_blocks.run(cmds, tmp_path)
    assert [r.problems for r in results] == [[], [], [], [], []]
    assert results[4].syntax_only


def test_broken_promises_are_reported(tmp_path: Path) -> None:
    page = (
        "```bash\nprintf 'alpha\\nbeta\\n'   # exit 1\n```\n```output\nbeta\nalpha\n```\n"
        "```bash\nif then fi   # needs: gpu\n```\n"
    )
    results = fenced_blocks.run(fenced_blocks.commands(page, "p.md"), tmp_path)
    first, marked = results
    assert any("exit 0, the page says 1" in p for p in first.problems)
    assert any("'alpha'" in p for p in first.problems)  # shown in another order than printed
    assert marked.syntax_only and marked.problems


def test_output_block_must_follow_its_command_block() -> None:
    with pytest.raises(ValueError, match="must follow"):
        fenced_blocks.commands("```bash\necho a\n```\n\nprose\n\n```output\na\n```\n", "p.md")
    with pytest.raises(ValueError, match="not one of"):
        fenced_blocks.commands("```bash\necho a   # needs: tpu\n```\n", "p.md")


def test_translation_is_held_to_the_original_run(tmp_path: Path) -> None:
    original = fenced_blocks.commands("```bash\necho hello\n```\n```output\nhello\n```\n", "en.md")
    results = fenced_blocks.run(original, tmp_path)
    same = fenced_blocks.commands("```bash\necho hello   # 你好\n```\n```output\nhello\n```\n", "zh.md")
    assert fenced_blocks.check_against(same, results) == []
    drifted = fenced_blocks.commands("```bash\necho bonjour\n```\n", "zh.md")
    assert fenced_blocks.check_against(drifted, results)
    wrong_output = fenced_blocks.commands("```bash\necho hello\n```\n```output\nhallo\n```\n", "zh.md")
    assert fenced_blocks.check_against(wrong_output, results)


def test_script_stops_at_an_unexpected_exit_code(tmp_path: Path) -> None:
    page = "```bash\ntrue\nfalse   # exit 1\ntrue   # exit 1\necho never\n```\n"
    cmds = fenced_blocks.commands(page, "p.md")
    script = tmp_path / "page.sh"
    script.write_text(fenced_blocks.script(cmds))
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True)
    assert proc.returncode == 1 and "p.md:4: exit 0, the page says 1" in proc.stderr
    assert "never" not in proc.stdout
