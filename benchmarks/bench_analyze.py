"""Benchmark: ``seedscope analyze`` / ``compare`` / ``subsets`` / ``report`` end to end against a plain pyarrow read.

Run: .venv/bin/python benchmarks/bench_analyze.py [--runs 20] [--examples 1000000] [--repeat 3] [--skip-analyze]
     .venv/bin/python benchmarks/bench_analyze.py --quick      (6 runs × 100,000 examples: checks that it works)
     .venv/bin/python benchmarks/bench_analyze.py --startup-only [--repeat 10]   (``seedscope --help`` alone)
     .venv/bin/python benchmarks/bench_analyze.py --plain-only [--repeat 3]   (the plain files alone, below)

Writes S Parquet prediction files (3 classes, gold labels; one run per file, as a seed sweep
leaves them) twice, once with text example ids (``ex0000001``) and once with integer ids (int64,
what ``pandas.to_parquet`` writes for an int column), then runs each in a fresh process, timed
from outside as a whole process (interpreter start and imports included) with its own peak
memory and CPU time: for each kind of id (1) the bare read, ``python -c "import pyarrow.parquet
as pq; [pq.read_table(f) for f in files]"``, and (2) ``seedscope analyze FILES --json``
(reading, checks, alignment, macro, micro, per-example stability, error bars, JSON); then, on
the text-id files, (3) ``seedscope compare A B`` with the files as two systems of S/2 runs, (4) ``seedscope
subsets A B`` (subsets of 10,000 examples, 20 seeds), (5) ``seedscope report FILES --html``,
and (6) ``seedscope --help`` (start-up), alternated with a bare interpreter start ``--repeat``
times (at least 5). Prints each one's seconds, peak and ratio to the bare read; the bare read
and ``analyze`` alternate ``--repeat`` times, so that both see the same load on a shared
machine, and the fastest of each is compared, with the medians beside them. ``analyze``'s own
CPU time is then split into stages (import, read + align, metrics + intervals, output). Also times
the micro kernel (mean CON + CCON) on int8 codes, as alignment stores them, against int64, and
``analyze`` of free-text answers (tens of thousands of classes, where a dense S × C × C
confusion array would need tens of GB).

Plain files, as a user's own script writes them: three int64 columns (``example_id``,
``prediction``, ``label``; 3 classes, 80 % correct) written by ``pyarrow.parquet.write_table``
with its defaults, 20 files × 10⁶ rows and 10 files × 10⁷ rows; ``seedscope analyze FILES`` as a
user types it (its defaults: 10,000 bootstrap resamples, the tables on the terminal) against the
bare read, alternated ``--repeat`` times, fastest against fastest, and the peaks. Their figures
go to ``benchmarks/results/analyze-plain.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BARE = "pass"
RAW = "import pyarrow.parquet as pq, sys; files = sys.argv[1:]; [pq.read_table(f) for f in files]"
COMMAND = """
import sys
from seedscope.cli import main
try:
    main(sys.argv[1:])
except SystemExit as done:
    assert not done.code, done.code
"""
#: analyze's stages in one process, CPU seconds each (the same calls the command makes)
STAGES = """
import io, json, sys, time
clock = time.process_time
start = clock()
from rich.console import Console
from seedscope.analysis.seed_effects import analyze
from seedscope.io import read_aligned_runs
from seedscope.report import tables
from seedscope.serialize import json_ready
imported = clock()
aligned = read_aligned_runs(sys.argv[1:])
read = clock()
result = analyze(aligned, n_boot=1000)
analysed = clock()
console = Console(file=io.StringIO(), width=120)
for title, frame in tables.analysis_sections(result, top_k=10).items():
    console.print(tables.to_rich(frame, title))
json.dumps(json_ready(result.to_dict()))
done = clock()
print(imported - start, read - imported, analysed - read, done - analysed)
"""


FREE_TEXT = """
import resource, time
import numpy as np, pandas as pd
from seedscope.analysis.seed_effects import analyze
rng = np.random.default_rng(0)
runs, examples = 10, 20_000
gold = np.array([f"answer {i}" for i in rng.integers(0, examples, examples)])
frames = [pd.DataFrame({"run": str(s), "example_id": np.arange(examples).astype(str), "label": gold,
                        "prediction": np.where(rng.random(examples) < 0.3, gold,
                                               np.array([f"other {i}" for i in rng.integers(0, examples, examples)]))})
          for s in range(runs)]
table = pd.concat(frames)
start = time.perf_counter()
result = analyze(table, n_boot=1000)
assert result.aligned.n_classes > 30_000
print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def write_files(folder: Path, runs: int, examples: int, ids: str) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir()
    rng = np.random.default_rng(0)
    ids = pa.array([f"ex{i:07d}" for i in range(examples)] if ids == "text" else np.arange(examples, dtype=np.int64))
    labels = rng.integers(0, 3, examples).astype(np.int64)
    paths = []
    for run in range(runs):
        right = rng.random(examples) < 0.7
        predictions = np.where(right, labels, rng.integers(0, 3, examples))
        path = folder / f"seed{run}.parquet"
        pq.write_table(pa.table({"example_id": ids, "prediction": predictions, "label": labels}), path)
        paths.append(str(path))
    return paths


#: (files, rows each) of the plain layout
PLAIN = ((20, 1_000_000), (10, 10_000_000))


def write_plain(folder: Path, runs: int, examples: int) -> list[str]:
    """Files of the plain layout: three int64 columns, 3 classes, each run right on 80 % of the examples."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir()
    rng = np.random.default_rng(0)
    ids = np.arange(examples, dtype=np.int64)
    labels = rng.integers(0, 3, examples)
    paths = []
    for run in range(runs):
        wrong = (labels + rng.integers(1, 3, examples)) % 3
        predictions = np.where(rng.random(examples) < 0.8, labels, wrong)
        path = folder / f"seed{run}.parquet"
        pq.write_table(pa.table({"example_id": ids, "prediction": predictions, "label": labels}), path)
        paths.append(str(path))
    return paths


def time_plain(folder: Path, repeat: int, sizes=PLAIN) -> list[dict]:
    """``seedscope analyze FILES`` (its defaults) against the bare read, on each size of plain files."""
    found = []
    for runs, examples in sizes:
        paths = write_plain(folder / f"plain-{runs}x{examples}", runs, examples)
        in_child(COMMAND, "analyze", *paths[:2])  # not timed: writes the bytecode cache
        raws, analyses = [], []
        for _ in range(repeat):  # alternate, so that both see the same load on a shared machine
            raws.append(in_child(RAW, *paths))
            analyses.append(in_child(COMMAND, "analyze", *paths))
        (raw, raw_peak, raw_cpu, _), (took, peak, cpu, _) = min(raws), min(analyses)
        row = {"files": runs, "rows": examples, "repeat": repeat, "read_s": raw, "read_cpu_s": raw_cpu,
               "read_peak_gb": raw_peak, "analyze_s": took, "analyze_cpu_s": cpu, "analyze_peak_gb": peak,
               "ratio": took / raw, "peak_ratio": max(a[1] for a in analyses) / max(r[1] for r in raws),
               "ratios": [a[0] / r[0] for r, a in zip(raws, analyses)]}
        print(f"plain files, {runs} × {examples:,} rows (int64 example_id, prediction, label): "
              f"bare read {raw:.2f} s (peak {raw_peak:.2f} GB), seedscope analyze {took:.2f} s (peak {peak:.2f} GB): "
              f"{row['ratio']:.2f}× the read, peak {row['peak_ratio']:.2f}× (fastest of {repeat}; each alternation "
              + " ".join(f"{r:.2f}×" for r in row["ratios"]) + ")")
        for path in paths:
            Path(path).unlink()
        found.append(row)
    out = Path(__file__).parent / "results" / "analyze-plain.json"
    out.write_text(json.dumps({"machine": os.uname().nodename, "cpus": os.cpu_count(),
                               "bytecode_cache": "PYTHONDONTWRITEBYTECODE" not in CHILD_ENV, "sizes": found},
                              indent=1) + "\n")
    return found


#: the children's environment: with Python's bytecode cache, as an installed package has it (without it every
#: start compiles seedscope's modules again, a fifth of a second), unless --no-bytecode-cache
CHILD_ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def in_child(code: str, *args: str) -> tuple[float, float, float, str]:
    """(the child's wall time as a whole process, measured from here; its own peak resident memory in GB and
    CPU seconds, user + system, from the kernel's account of it; what it printed)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-c", code, *args], stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                 env=CHILD_ENV)
        _, status, usage = os.wait4(child.pid, 0)
        took = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        if child.returncode:
            raise SystemExit(f"{args[:2]} failed: {err.read()[-2000:]}")
        return took, usage.ru_maxrss / 1e6, usage.ru_utime + usage.ru_stime, out.read()


def micro_kernel(runs: int, examples: int) -> tuple[float, float]:
    from seedscope.metrics.micro import mean_ccon, mean_con

    rng = np.random.default_rng(1)
    labels = rng.integers(0, 3, examples).astype(np.int8)
    codes = np.where(rng.random((runs, examples)) < 0.7, labels, rng.integers(0, 3, (runs, examples))).astype(np.int8)
    wide = codes.astype(np.int64)
    timings = []
    for predictions, gold in ((codes, labels), (wide, labels.astype(np.int64))):
        start = time.perf_counter()
        mean_con(predictions, 3), mean_ccon(predictions, gold)
        timings.append(time.perf_counter() - start)
    return timings[0], timings[1]


def time_analyze(paths: list[str], ids: str, args) -> float:
    """The bare read and ``analyze`` of one kind of ids, alternated (only the read with --skip-analyze); returns
    the bare read's seconds."""
    size = sum(Path(p).stat().st_size for p in paths) / 1e6
    print(f"{args.runs} Parquet files × {args.examples:,} examples × 3 classes, {ids} ids ({size:.0f} MB); whole "
          f"processes, wall from outside, CPU and peak from the kernel; fastest of {args.repeat}")
    out = str(Path(paths[0]).parent / "result.json")
    analyze = ["analyze", *paths, "--json", out, "--n-boot", "1000", "--top", "10"]
    raws, analyses = [], []
    for _ in range(args.repeat):  # alternate, so that both see the same load on a shared machine
        raws.append(in_child(RAW, *paths))
        if not args.skip_analyze:
            analyses.append(in_child(COMMAND, *analyze))
    raw, raw_peak, raw_cpu, _ = min(raws)
    print(f"  {'pyarrow read_table (bare read)':30} {raw:6.2f} s   cpu {raw_cpu:5.2f} s   peak {raw_peak:.2f} GB   "
          f"median {_median(raws):.2f} s")
    if args.skip_analyze:
        return raw
    took, peak, cpu, _ = min(analyses)
    print(f"  {'seedscope analyze --json':30} {took:6.2f} s   cpu {cpu:5.2f} s   peak {peak:.2f} GB   "
          f"median {_median(analyses):.2f} s")
    print(f"    = {took / raw:.2f}× the bare read, fastest against fastest (whole process; cpu {cpu / raw_cpu:.2f}×); "
          f"medians {_median(analyses) / _median(raws):.2f}×; each alternation "
          + " ".join(f"{a[0] / r[0]:.2f}×" for r, a in zip(raws, analyses)))
    stages = [float(v) for v in in_child(STAGES, *paths)[3].split()]
    print("    analyze's CPU by stage: " + ", ".join(
        f"{name} {value:.2f} s" for name, value in zip(("import", "read + align", "metrics + intervals", "output"),
                                                      stages)))
    result = json.loads(Path(out).read_text())
    print(f"    mean accuracy {result['metrics']['accuracy']['mean']:.4f}, CON {result['micro']['con']:.4f}, "
          f"most unstable {result['most_unstable'][0]['example_id']!r}")
    return raw


def time_startup(repeat: int) -> None:
    """``seedscope --help`` as a whole process, alternated with a bare interpreter start (what every command pays
    before its first import)."""
    bare, helps = [], []
    for _ in range(max(repeat, 5)):
        bare.append(in_child(BARE))
        helps.append(in_child(COMMAND, "--help"))
    print(f"{'seedscope --help (start-up)':32} {min(helps)[0]:6.2f} s   cpu {min(helps)[2]:5.2f} s   "
          f"peak {min(helps)[1]:.2f} GB   median {_median(helps):.2f} s   (bare interpreter {min(bare)[0]:.3f} s, "
          f"median {_median(bare):.3f} s; fastest and median of {len(helps)} alternations)")


def _median(timings: list[tuple]) -> float:
    """The median wall seconds of ``in_child`` results."""
    return float(np.median([timing[0] for timing in timings]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--examples", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="alternations of the bare read and analyze")
    parser.add_argument("--quick", action="store_true", help="6 runs × 100,000 examples, one alternation")
    parser.add_argument("--skip-analyze", action="store_true")
    parser.add_argument("--startup-only", action="store_true", help="time seedscope --help only")
    parser.add_argument("--plain-only", action="store_true", help="time the plain files only")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="keep PYTHONDONTWRITEBYTECODE for the children, if it is set (each compiles the modules)")
    args = parser.parse_args()
    if args.no_bytecode_cache:
        CHILD_ENV.update(os.environ)
    print(f"children {'compile every module' if 'PYTHONDONTWRITEBYTECODE' in CHILD_ENV else 'with a bytecode cache'}")
    if args.startup_only:
        return time_startup(args.repeat)
    if args.plain_only:
        with tempfile.TemporaryDirectory() as folder:
            time_plain(Path(folder), args.repeat)
        return
    if args.quick:
        args.runs, args.examples, args.repeat = 6, 100_000, 1
    with tempfile.TemporaryDirectory() as folder:
        for ids in ("int", "text"):  # the text-id files stay for the commands below, against their bare read
            paths = write_files(Path(folder) / ids, args.runs, args.examples, ids)
            raw = time_analyze(paths, ids, args)
        if args.skip_analyze:
            return
        half = len(paths) // 2
        systems = [Path(folder) / "A", Path(folder) / "B"]
        for system, chunk in zip(systems, (paths[:half], paths[half:])):
            system.mkdir()
            for path in chunk:
                Path(path).rename(system / Path(path).name)
        moved = sorted(str(p) for s in systems for p in s.iterdir())
        a, b = map(str, systems)
        commands = {
            "seedscope compare A B": ["compare", a, b, "--n-boot", "1000"],
            "seedscope subsets A B": ["subsets", a, b, "--subset-size", str(min(10_000, args.examples // 10)),
                                      "--n-seeds", "20"],
            "seedscope report --html": ["report", *moved, "--html", str(Path(folder) / "r.html"), "--top", "10"],
        }
        for name, command in commands.items():
            took, peak, cpu, _ = in_child(COMMAND, *command)
            print(f"{name:32} {took:6.2f} s   cpu {cpu:5.2f} s   peak {peak:.2f} GB   = {took / raw:.1f}× the bare read")
        time_startup(args.repeat)
        if not args.quick:
            time_plain(Path(folder), args.repeat)
    took, peak, _, _ = in_child(FREE_TEXT)
    print(f"free-text answers, 10 runs × 20,000 examples, >30,000 distinct answers: analyze (whole process) "
          f"{took:.2f} s, process peak {peak:.2f} GB")
    int8, int64 = micro_kernel(args.runs, args.examples)
    print(f"micro kernel (mean CON + CCON), S={args.runs}, N={args.examples:,}: int8 codes {int8:.3f} s, "
          f"int64 {int64:.3f} s")


if __name__ == "__main__":
    main()
