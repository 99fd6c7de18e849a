"""The example in docs/python.md runs as printed (the docs are part of the repository, not of the
package, so this test is skipped where they are absent)."""

import os
import re

import pytest

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "python.md")


@pytest.mark.skipif(not os.path.exists(DOC), reason="docs/python.md not present")
def test_docs_example_runs(capsys):
    text = open(DOC, encoding="utf-8").read()
    example = text.split("## Example", 1)[1]
    code = re.search(r"```python\n(.*?)```", example, re.S).group(1)
    exec(compile(code, "docs/python.md", "exec"), {})
    out = capsys.readouterr().out
    acc = float(re.search(r"test accuracy ([0-9.]+)", out).group(1))
    assert acc > 0.9, out
    assert "best C on the path" in out
    assert float(re.search(r"ODM accuracy ([0-9.]+)", out).group(1)) > 0.9, out
    assert "certified True" in out and "robust: chosen C" in out
