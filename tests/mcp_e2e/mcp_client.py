"""End-to-end test of `stallscope mcp` with the official Python MCP client (PyPI `mcp`).

Run by tests/mcp_client.rs (cargo test), or by hand:

    python tests/mcp_e2e/mcp_client.py --bin target/release/stallscope \
        --sample samples/resnet50_v100_num_workers_0.pt.trace.json.gz

Starts the server as a client does (a subprocess on stdio), lists its tools, and checks the
answers against the command line's: the verdict of `analyze` equals `stallscope analyze
--format json`'s, `kernels top=5` gives its first five kernels, a truncated file gives a tool
error naming the byte offset the command line names, paths outside the allowed roots (directly,
through `..`, through a symlink) are refused, and a second `analyze` of the same trace comes
from the server's cache (both timed, printed). A second session offers MCP roots and checks that
they, not the working directory, bound what the server reads.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcp.client.stdio import StdioServerParameters
from mcp_types import ListRootsResult, Root

from mcp import Client

EXPECTED_TOOLS = {
    "analyze",
    "kernels",
    "ops",
    "phases",
    "steps",
    "explain_finding",
    "slice",
    "diff",
}


def check(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


def cli_json(binary: str, trace: Path) -> dict:
    out = subprocess.run(
        [binary, "analyze", str(trace), "--format", "json", "-q"],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout)


def cli_error(binary: str, trace: Path) -> str:
    out = subprocess.run(
        [binary, "analyze", str(trace)], check=False, capture_output=True, text=True
    )
    check(out.returncode == 2, f"the CLI exits 2 on {trace}, got {out.returncode}")
    return out.stderr.strip()


def text_of(result) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


async def call(client: Client, tool: str, args: dict):
    t0 = time.perf_counter()
    r = await client.call_tool(tool, args)
    return r, (time.perf_counter() - t0) * 1000.0


def expect_ok(r, what: str) -> dict:
    check(not r.is_error, f"{what}: unexpected tool error: {text_of(r)}")
    check(isinstance(r.structured_content, dict), f"{what}: no structured content")
    return r.structured_content


def expect_error(r, what: str) -> str:
    check(r.is_error, f"{what}: expected a tool error, got {text_of(r)[:300]}")
    return text_of(r)


async def main_session(
    binary: str, work: Path, sample: Path, outside: Path, ncu: Path | None
) -> None:
    expected = cli_json(binary, sample)
    params = StdioServerParameters(command=binary, args=["mcp"], cwd=str(work))
    async with Client(params, cache=None) as client:
        tools = await client.list_tools()
        names = {t.name for t in tools.tools}
        print(f"tools: {sorted(names)}")
        check(EXPECTED_TOOLS <= names, f"missing tools: {EXPECTED_TOOLS - names}")
        docs = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text()
        for t in tools.tools:
            check(t.input_schema.get("type") == "object", f"{t.name}: input schema")
            props = t.input_schema.get("properties", {})
            inputs = {"before", "after"} if t.name == "diff" else {"path"}
            check(inputs <= set(props), f"{t.name}: no {sorted(inputs)} input")
            for name in [t.name, *props]:
                check(f"`{name}`" in docs, f"docs/mcp.md does not document `{name}`")

        # analyze: same verdict and findings as the command line; then from the cache
        r, first_ms = await call(client, "analyze", {"path": "sample.json.gz"})
        a = expect_ok(r, "analyze")
        check(
            a["verdict"] == expected["verdict"],
            f"verdict {a['verdict']!r} != CLI {expected['verdict']!r}",
        )
        check(
            [f["id"] for f in a["findings"]]
            == [f["id"] for f in expected["findings"]][: len(a["findings"])],
            "finding ids differ from the CLI's",
        )
        check(
            a["headline"]["step_time_us"] == expected["step_time_us"],
            "step time differs",
        )
        check(a["cached"] is False, "the first analyze was cached")
        size = len(r.content[0].text)
        check(size < 20_000, f"the summary is {size} bytes, too large for an agent")
        r, second_ms = await call(client, "analyze", {"path": "sample.json.gz"})
        b = expect_ok(r, "analyze again")
        check(
            b["cached"] is True,
            "the second analyze of the same trace was not served from the cache",
        )
        check(b["verdict"] == a["verdict"], "the cached verdict differs")

        # diff of the sample against itself: no change beyond noise, both sides from the
        # cache, and the step change of `stallscope diff --format json`
        cli_diff = json.loads(
            subprocess.run(
                [binary, "diff", str(sample), str(sample), "--format", "json", "-q"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
        r, diff_ms = await call(
            client, "diff", {"before": "sample.json.gz", "after": "sample.json.gz"}
        )
        d = expect_ok(r, "diff")
        st = d["step_time"]
        check(
            st["change_us"] == cli_diff["step_time"]["change_us"] == 0.0,
            f"diff step change {st['change_us']} != CLI {cli_diff['step_time']['change_us']}",
        )
        check(
            st["noise"] == cli_diff["step_time"]["noise"],
            "diff noise test differs from the CLI's",
        )
        check(
            st["noise"]["judgement"] in ("within_noise", "too_few_steps"),
            f"a trace against itself is {st['noise']['judgement']}",
        )
        check(d["summary"] == cli_diff["summary"], "diff summary differs from the CLI's")
        check(
            d["findings"]["resolved"] == [] and d["findings"]["new"] == [],
            "a trace against itself resolves or adds findings",
        )
        check(
            d["cached"] == {"before": True, "after": True},
            f"diff did not reuse the analyses: {d['cached']}",
        )
        r, _ = await call(
            client,
            "diff",
            {"before": "sample.json.gz", "after": "sample.json.gz", "detail": True},
        )
        full = expect_ok(r, "diff detail")
        full.pop("cached")
        for k in ("before", "after"):
            for f in ("path", "source"):
                full[k][f] = cli_diff[k][f]
        check(full == cli_diff, "diff detail differs from `stallscope diff --format json`")
        msg = expect_error(
            (await call(client, "diff", {"before": "sample.json.gz", "after": "trunc.json"}))[
                0
            ],
            "diff of a truncated side",
        )
        check(msg.startswith("after side: "), f"the diff error names no side: {msg}")
        print(f"diff sample against itself: {d['summary']} ({diff_ms:.1f} ms, cached sides)")
        print(
            f"analyze {sample.name}: first call {first_ms:.1f} ms (read + analysis), "
            f"second call {second_ms:.1f} ms (cache), summary {size} bytes"
        )
        check(second_ms < first_ms, "the cached call was not faster")

        # a table with top=5: the CLI's first five kernels
        r, ms = await call(client, "kernels", {"path": "sample.json.gz", "top": 5})
        k = expect_ok(r, "kernels")
        check(len(k["rows"]) == 5, f"kernels top=5 gave {len(k['rows'])} rows")
        check(
            [(x["name"], x["total_us"]) for x in k["rows"]]
            == [(x["name"], x["total_us"]) for x in expected["kernels"][:5]],
            "kernels differ from the CLI's",
        )
        check(k["cached"] is True, "kernels did not reuse the analysis")
        print(f"kernels top=5: {ms:.1f} ms (cache), first: {k['rows'][0]['name'][:60]}")

        # sort and filter
        r, _ = await call(
            client, "ops", {"path": "sample.json.gz", "top": 3, "sort": "calls"}
        )
        o = expect_ok(r, "ops sort=calls")
        calls = [x["calls"] for x in o["rows"]]
        check(
            calls == sorted(calls, reverse=True) and len(calls) == 3,
            f"ops by calls: {calls}",
        )
        check(
            calls[0] == max(x["calls"] for x in expected["ops"]),
            "ops sort: not the most called op",
        )
        r, _ = await call(
            client, "kernels", {"path": "sample.json.gz", "top": 0, "filter": "GEMM"}
        )
        f = expect_ok(r, "kernels filter")
        want = [x["name"] for x in expected["kernels"] if "gemm" in x["name"].lower()]
        check(
            [x["name"] for x in f["rows"]] == want,
            "kernels filter differs from the CLI's table",
        )
        r, _ = await call(
            client, "steps", {"path": "sample.json.gz", "all": True, "top": 0}
        )
        s = expect_ok(r, "steps all")
        check(
            s["rows_total"] == len(s["rows"]) >= len(expected["steps"]), "steps --all"
        )
        msg = expect_error(
            (await call(client, "ops", {"path": "sample.json.gz", "sort": "nope"}))[0],
            "bad sort",
        )
        check("calls" in msg, f"the sort error lists the columns: {msg}")

        # explain_finding: full evidence and Perfetto timestamps
        fid = expected["findings"][0]["id"]
        r, _ = await call(
            client, "explain_finding", {"path": "sample.json.gz", "id": fid}
        )
        e = expect_ok(r, "explain_finding")
        full = e["findings"][0]
        check(
            full["evidence"]["facts"] == expected["findings"][0]["evidence"]["facts"],
            "evidence differs",
        )
        for loc in full["evidence"]["locations"]:
            want_ts = expected["source"]["trace_start_us"] + loc["start_us"]
            check(
                abs(loc["ts_us"] - want_ts) < 1e-3,
                "ts_us is not trace_start_us + start_us",
            )
        print(f"explain_finding {fid}: {len(full['evidence']['locations'])} locations")
        expect_error(
            (
                await call(
                    client, "explain_finding", {"path": "sample.json.gz", "id": "nope"}
                )
            )[0],
            "bad id",
        )

        # slice: a small trace in the server's temporary folder, readable by the CLI
        r, _ = await call(client, "slice", {"path": "sample.json.gz", "steps": "6..7"})
        sl = expect_ok(r, "slice")
        out = Path(sl["output"])
        check(
            out.is_file() and str(out).startswith(tempfile.gettempdir()),
            f"slice output {out}",
        )
        check(sl["events_out"] < sl["events_in"], "the slice is not smaller")
        sliced = cli_json(binary, out)
        check(
            [x["name"] for x in sliced["steps"]]
            == ["ProfilerStep#6", "ProfilerStep#7"],
            "slice steps",
        )
        r, _ = await call(
            client,
            "slice",
            {"path": "sample.json.gz", "steps": "6", "output": "s6.json"},
        )
        check(
            Path(expect_ok(r, "slice to output")["output"])
            == (work / "s6.json").resolve(),
            "named output",
        )
        print(
            f"slice steps 6..7: {sl['events_out']} of {sl['events_in']} events -> {out}"
        )
        expect_error(
            (
                await call(
                    client, "slice", {"path": "sample.json.gz", "output": "../x.json"}
                )
            )[0],
            "slice out",
        )
        expect_error(
            (await call(client, "slice", {"path": "sample.json.gz", "output": "x.py"}))[
                0
            ],
            "slice .py",
        )

        # a folder of per-rank traces: the command line's cross-rank report
        folder = cli_json(binary, work / "ranks")
        r, _ = await call(client, "analyze", {"path": "ranks"})
        f = expect_ok(r, "analyze a folder")
        check(f["ranks"] is not None, "no ranks section for a folder")
        for k in ("verdict", "slowest_rank", "fastest_rank", "median_step_time_us", "count"):
            check(
                f["ranks"][k] == folder["ranks"][k],
                f"folder {k}: {f['ranks'][k]!r} != CLI {folder['ranks'][k]!r}",
            )
        check(
            [(k["rank"], k["step_time_us"]) for k in f["ranks"]["ranks"]]
            == [(k["rank"], k["step_time_us"]) for k in folder["ranks"]["ranks"]],
            "the folder's rank rows differ from the CLI's",
        )
        check(f["verdict"] == folder["verdict"], "the slowest rank's verdict differs")
        r, _ = await call(client, "kernels", {"path": "ranks"})
        check(
            expect_ok(r, "kernels of a folder")["cached"] is True,
            "the folder's report was not kept for the table tools",
        )
        print(f"folder: {f['ranks']['count']} ranks, {f['ranks']['verdict']}")

        # an Nsight Compute CSV alone: its findings and kernels, as the command line
        if ncu is not None:
            want = cli_json(binary, work / "kernels.csv")
            r, _ = await call(client, "analyze", {"path": "kernels.csv"})
            n = expect_ok(r, "analyze an ncu CSV")
            check(n["ncu"] is not None, "no ncu section for an Nsight Compute CSV")
            check(
                n["ncu"]["launches"] == len(want["ncu"]["launches"]),
                "ncu launches differ from the CLI's",
            )
            check(
                [x["id"] for x in n["findings"]]
                == [x["id"] for x in want["findings"]][: len(n["findings"])],
                "ncu finding ids differ from the CLI's",
            )
            print(f"ncu: {n['ncu']['launches']} launches, {len(n['findings'])} findings")

        # a truncated file: a tool error naming the byte offset, as the command line does
        r, _ = await call(client, "analyze", {"path": "trunc.json"})
        msg = expect_error(r, "truncated trace")
        cli = cli_error(binary, work / "trunc.json")
        byte = re.search(r"byte \d+", cli)
        check(byte is not None, f"the CLI names no byte offset: {cli}")
        check(
            byte.group(0) in msg,
            f"tool error {msg!r} lacks the CLI's {byte.group(0)!r}",
        )
        print(f"truncated: {msg}")

        # paths outside the allowed roots: refused (absolute, `..`, symlink), the server lives on
        for p in [str(outside), "../outside.json.gz", "escape.json.gz"]:
            msg = expect_error(
                (await call(client, "analyze", {"path": p}))[0], f"outside path {p}"
            )
            check("refused" in msg, f"{p}: not refused: {msg}")
        print(f"outside the roots: {msg}")
        for args in [
            {"path": "missing.json"},
            {"path": "sample.json.gz", "steps": "x..y"},
            {"path": "sample.json.gz", "all": True, "steps": "3"},
            {"path": "."},
        ]:
            expect_error((await call(client, "analyze", args))[0], f"bad input {args}")
        r, _ = await call(client, "analyze", {"path": "sample.json.gz"})
        check(
            expect_ok(r, "after errors")["cached"] is True,
            "the server lost its cache after errors",
        )


async def roots_session(binary: str, base: Path, work: Path) -> None:
    """The client offers MCP roots: they bound the reads, the working directory does not."""

    async def list_roots(_context) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=work.resolve().as_uri(), name="work")])

    params = StdioServerParameters(command=binary, args=["mcp"], cwd=str(base))
    async with Client(
        params, cache=None, mode="legacy", list_roots_callback=list_roots
    ) as client:
        r = await client.call_tool("analyze", {"path": "sample.json.gz"})
        check(not r.is_error, f"relative to the client's root: {text_of(r)}")
        r = await client.call_tool("analyze", {"path": str(base / "outside.json.gz")})
        check(
            r.is_error and "refused" in text_of(r),
            "a file in the working directory outside the roots",
        )
        print(
            "roots: the client's root is read, the working directory outside it is refused"
        )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--sample", required=True)
    ap.add_argument("--ncu", help="an Nsight Compute CSV (the corpus'), read alone")
    args = ap.parse_args()
    binary = str(Path(args.bin).resolve())
    sample = Path(args.sample).resolve()
    base = Path(tempfile.mkdtemp(prefix="stallscope-mcp-test-")).resolve()
    try:
        work = base / "work"
        work.mkdir()
        shutil.copy(sample, work / "sample.json.gz")
        shutil.copy(sample, base / "outside.json.gz")
        os.symlink(base / "outside.json.gz", work / "escape.json.gz")
        raw = gzip.decompress(sample.read_bytes())
        (work / "trunc.json").write_bytes(raw[: len(raw) * 2 // 3])
        (work / "ranks").mkdir()
        for r in (0, 1):
            shutil.copy(sample, work / "ranks" / f"rank{r}.json.gz")
        ncu = None
        if args.ncu:
            ncu = work / "kernels.csv"
            shutil.copy(args.ncu, ncu)
        asyncio.run(main_session(binary, work, sample, base / "outside.json.gz", ncu))
        asyncio.run(roots_session(binary, base, work))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print("MCP END-TO-END OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
