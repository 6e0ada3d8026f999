"""The notebook view (`Report._repr_html_`) in a real headless browser: the report loads in its
frame with no console error, and its styles do not reach the page around it.

Needs chromium on PATH (``.ci/run`` installs it); without it this skips, unless
STALLSCOPE_REQUIRE_BROWSER=1, which makes it fail. Drives chromium like tests/html_browser.rs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest
import stallscope
from conftest import SAMPLES

# what the page around the report reads of its own style after everything loaded
PROBE = """
<p id="probe">notebook text</p>
<script>
window.addEventListener("load", () => {
  const s = getComputedStyle(document.body);
  const p = getComputedStyle(document.getElementById("probe"));
  document.body.setAttribute("data-style", [s.backgroundColor, s.color, s.fontFamily,
    p.fontSize, p.color, document.styleSheets.length].join("|"));
  document.body.setAttribute("data-frames", String(document.querySelectorAll("iframe").length));
});
</script>
"""


def browser() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("STALLSCOPE_REQUIRE_BROWSER") == "1":
        pytest.fail("chromium not found on PATH but STALLSCOPE_REQUIRE_BROWSER=1")
    pytest.skip("no chromium on PATH (apt-get install chromium)")


def load(tmp_path, name: str, body: str) -> tuple[str, list[str]]:
    """The DOM after load and the console lines of a page with ``body``."""
    page = tmp_path / f"{name}.html"
    page.write_text(
        f"<!doctype html><html><head><meta charset='utf-8'></head><body>{PROBE}{body}"
        "</body></html>",
        encoding="utf-8",
    )
    p = subprocess.run(
        [
            browser(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-extensions",
            "--disable-dev-shm-usage",
            "--virtual-time-budget=5000",
            f"--user-data-dir={tmp_path / ('profile-' + name)}",
            "--dump-dom",
            "--enable-logging=stderr",
            "--v=0",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert p.returncode == 0, p.stderr
    console = [line for line in p.stderr.splitlines() if ":CONSOLE" in line]
    return p.stdout, console


def attr(dom: str, name: str) -> str:
    m = re.search(rf'{name}="([^"]*)"', dom)
    assert m, f"{name} not set: the probe script did not run"
    return m.group(1)


@pytest.mark.parametrize(
    "sample", ["resnet50_v100_num_workers_0.pt.trace.json.gz", "h100_bert_small.json.gz"]
)
def test_repr_html_loads_with_no_console_error_and_does_not_leak(tmp_path, sample):
    report = stallscope.analyze(SAMPLES / sample)
    alone, console = load(tmp_path, "alone", "")
    assert console == []
    dom, console = load(tmp_path, "report", report._repr_html_())
    assert console == [], "\n".join(console)
    assert attr(dom, "data-frames") == "1"
    # the report's styles and scripts stayed in their frame
    assert attr(dom, "data-style") == attr(alone, "data-style")


def test_the_console_check_can_fail(tmp_path):
    # the same harness sees an error raised inside a sandboxed srcdoc frame
    frame = (
        '<iframe sandbox="allow-scripts" srcdoc="&lt;script&gt;undefinedThing()&lt;/script&gt;">'
    )
    _, console = load(tmp_path, "control", frame + "</iframe>")
    assert any("undefinedThing" in line for line in console), console
