"""The campaign of issue 50, rerun as a user would: ``python -m seedscope sweep --runner icl --engine openai`` in a
terminal (a pseudo-terminal, so that Rich draws its progress as it does for a user), against an OpenAI-compatible
server on localhost that misbehaves on cue (tests/faulty_server.py's ``FaultyServer``), in about 100 cases: every bad shape
before the run and during it, shapes of generated, chat and sampled answers, every status, every transport failure,
answers to note, malformed URLs, a server killed mid-study, seedscope killed mid-study, a refused key, garbage cached
by an older seedscope. A case that fails mid-run is then asked again with ``--resume`` against the server fixed.

It counts, against the issue's goals:

- ``tracebacks``: a Python traceback in what the terminal showed or in a run's recorded error, or a crash (goal 0);
- ``wrong_results_accepted``: a bad answer's study that ends well, or a finished study whose predictions differ from
  the same study against a server that behaves (goal 0);
- ``keys_found``: the API key (which the server quotes back in its 401, 403, 400 and 500 bodies, a header and a body)
  in the terminal's text or in any file the study wrote (goal 0);
- ``silent_waits_over_60s``: a stretch of more than 60 s in which the terminal said nothing new but a bar's timer (goal 0);
- ``resume_unfinished``: a study that ``--resume`` against the fixed server did not finish (goal 0);
- ``unclear_lines``: a case whose line (or note) does not say what happened in its own words: the expected outcome
  (exit 2 before the run, the run recorded failed, a note) or its words missing, or "--predict generate" advised where
  the server answered nothing (goal ≤ 2).

Run (about 20 minutes; with nothing else running on the machine):

    .venv/bin/python benchmarks/server_faults_campaign.py \
        --json benchmarks/results/server-faults-campaign.json [--only NAME ...]
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import platform
import pty
import re
import select
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the tests' misbehaving server, tests/faulty_server.py
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from tests.faulty_server import SAID, SHAPES, STATUSES, TRANSPORTS, FaultyServer  # noqa: E402

from seedscope.store import ExperimentStore  # noqa: E402

KEY = "sk-campaign-9f3b-5ecret-0123456789"
DATA = REPO.parent / "shared" / "data"
#: requests the check before a scored study asks (the first example's two answers), and before a generated one
CHECKED = {"score": 2, "generate": 1}
SILENT_SECONDS = 60.0
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]")


@dataclass
class Case:
    name: str
    fault: str | None = None
    start: int = 0  # the number of the first request spoiled (0: the check before the run)
    extra: list[str] = field(default_factory=list)
    expect: str = "refused"  # refused: exit 2 before the run; failed: the run recorded failed, then --resume; done
    said: str | None = None  # words the line (or the note) must hold
    bad: bool = False  # the fault is a bad answer: a study that ends well on it accepted a wrong result
    key: str = KEY  # the key the user gives (the server wants KEY)
    special: str | None = None  # kill_server, kill_seedscope, garbage_cache
    slow_seconds: float = 3.0


def cases() -> list[Case]:
    found = []
    for shape in SHAPES:
        found.append(Case(f"shape-{shape}-before", shape, said=SAID[shape], bad=True))
    for shape in SHAPES:
        found.append(Case(f"shape-{shape}-mid-run", shape, start=CHECKED["score"] + 3, expect="failed", said=SAID[shape],
                          bad=True))
    generate = ["--predict", "generate"]
    for shape in ("text_none", "text_not_string", "no_choices", "empty_choices", "html"):
        found.append(Case(f"generate-{shape}-mid-run", shape, start=CHECKED["generate"] + 2, extra=generate,
                          expect="failed", said=SAID[shape], bad=True))
    found.append(Case("chat-text_none-before", "text_none", extra=[*generate, "--format", "chat"],
                      said="has no message content", bad=True))
    sampled = [*generate, "--samples", "3"]
    found.append(Case("samples-fewer_choices-mid-run", "fewer_choices", start=CHECKED["generate"] + 2, extra=sampled,
                      expect="failed", said="it holds 2 choice(s) where n=3 was asked", bad=True))
    found.append(Case("samples-more_choices-mid-run", "more_choices", start=CHECKED["generate"] + 2, extra=sampled,
                      expect="failed", said="it holds 4 choice(s) where n=3 was asked", bad=True))
    for status in STATUSES:
        found.append(Case(f"status-{status}-before", status, said=SAID[status]))
    for status in STATUSES:
        found.append(Case(f"status-{status}-mid-run", status, start=CHECKED["score"] + 3, expect="failed",
                          said=SAID[status]))
    for transport in TRANSPORTS:
        found.append(Case(f"transport-{transport}-before", transport, said=SAID[transport]))
    for transport in TRANSPORTS:
        quick = ["--set", "request_timeout=5", "--set", "max_retries=1"] if transport == "hang" else []
        found.append(Case(f"transport-{transport}-mid-run", transport, start=CHECKED["score"] + 3, extra=quick,
                          expect="failed", said=SAID[transport]))
    found.append(Case("transport-hang-mid-run-defaults", "hang", start=CHECKED["score"] + 3, expect="failed",
                      said=SAID["hang"]))
    found.append(Case("transport-hang-before-timeout-5-retries-1", "hang",
                      extra=["--set", "request_timeout=5", "--set", "max_retries=1"], said="did not answer within 5 s"))
    noted = {"finish_length": (generate, "answers stopped at max_tokens (finish_reason: length)"),
             "long_text": (generate, "answers held far more text than max_tokens tokens can"),
             "other_model": ([], "the server answered as model 'someone-elses-model'"),
             "redirect": ([], "the server redirected requests to"),
             "huge": ([], None), "key_in_body": (generate, None), "key_in_header": ([], None), "slow": ([], None)}
    for fault, (extra, said) in noted.items():
        found.append(Case(f"noted-{fault}", fault, extra=extra, expect="done", said=said, slow_seconds=1.0))
    for url, said in (("ftp://127.0.0.1:8000/v1", "is not an http:// or https:// URL"),
                      ("127.0.0.1:8000/v1", "is not an http:// or https:// URL"),
                      ("http://127.0.0.1:99999/v1", "is malformed"), ("http:///v1", "is malformed")):
        found.append(Case(f"url-{url}", None, extra=["--base-url", url], said=said))
    found.append(Case("server-killed-mid-study", None, expect="failed", said="no server answers at",
                      special="kill_server"))
    found.append(Case("seedscope-killed-mid-study", "slow", expect="killed", special="kill_seedscope",
                      slow_seconds=1.0))
    found.append(Case("key-refused", None, key="sk-wrong-key-0123456789", said="refused the API key (401)"))
    found.append(Case("key-variable-unset", None, key="", said="is not set in this environment"))
    found.append(Case("cache-garbage-of-an-older-seedscope", "503", start=CHECKED["score"] + 5, expect="failed",
                      said=SAID["503"], special="garbage_cache"))
    return found


@dataclass
class Ran:
    code: int
    text: str
    longest_silence: float
    seconds: float


def in_terminal(args: list[str], env: dict, timeout: float = 900, kill_when=None) -> Ran:
    """``args`` run in a pseudo-terminal (as a user's shell would), what it showed, and its longest silence."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    started = time.monotonic()
    process = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=REPO, start_new_session=True)
    os.close(slave)
    chunks: list[tuple[float, str]] = []
    while True:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the terminal's other end closed: the command ended
                break
            if not data:
                break
            chunks.append((time.monotonic(), data.decode("utf-8", errors="replace")))
        if kill_when is not None and kill_when():
            os.killpg(process.pid, signal.SIGKILL)
            kill_when = None
        if time.monotonic() - started > timeout:
            os.killpg(process.pid, signal.SIGKILL)
    code = process.wait()
    ended = time.monotonic()
    os.close(master)
    voiced = [started] + [moment for moment, text in chunks if _says_something(text)] + [ended]
    silence = max(later - earlier for earlier, later in zip(voiced, voiced[1:]))
    return Ran(code, ANSI.sub("", "".join(text for _, text in chunks)).replace("\r", "\n"), silence, ended - started)


def _says_something(text: str) -> bool:
    """Terminal output that says something: more than a progress bar redrawn with its counts and timers."""
    for piece in re.split(r"[\r\n]", ANSI.sub("", text)):
        words = [word for word in re.split(r"[\s━╸╺╺─]+", piece) if word]
        left = [word for word in words if not re.fullmatch(r"runs|ETA|[\d:/?.%-]+|\S+__\S+", word)]
        if left:
            return True
    return False


def sweep_args(url: str, out: Path, extra: list[str], resume: bool = False) -> list[str]:
    args = [sys.executable, "-m", "seedscope", "sweep", "--runner", "icl", "--task", "sst2", "--model", "faulty-model",
            "--seeds", "1", "--shots", "1", "--set", "max_eval_examples=4", "--engine", "openai", "--base-url", url,
            "--api-key-env", "CAMPAIGN_KEY", "--data-dir", str(DATA), "--out", str(out)]
    extra = list(extra)
    if "--base-url" in extra:  # a case's own URL
        at = extra.index("--base-url")
        args[args.index("--base-url") + 1] = extra[at + 1]
        del extra[at: at + 2]
    return args + extra + (["--resume"] if resume else [])


def predictions(out: Path) -> list[tuple]:
    table = ExperimentStore.open(out).predictions()
    return sorted(table[["run", "example_id", "prediction"]].itertuples(index=False, name=None))


class Campaign:
    def __init__(self, work: Path):
        self.work = work
        self.references: dict[tuple, list[tuple]] = {}
        self.env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "TERM": "xterm-256color", "COLUMNS": "200",
                    "HF_HUB_OFFLINE": "1", "PYTHONFAULTHANDLER": "1"}  # a crash shows its stacks, and counts

    def reference(self, extra: list[str]) -> list[tuple]:
        """The predictions of the same study against a server that behaves."""
        key, words = [], list(extra)
        while words:  # the settings of waiting and retrying change no prediction: one reference for all of them
            word = words.pop(0)
            if word == "--set" and words and words[0].startswith(("request_timeout=", "max_retries=")):
                words.pop(0)
            else:
                key.append(word)
        key = tuple(key)
        if key not in self.references:
            out = self.work / f"reference-{len(self.references)}"
            with FaultyServer(key=KEY) as server:
                ran = in_terminal(sweep_args(server.url, out, list(key)), {**self.env, "CAMPAIGN_KEY": KEY})
            assert ran.code == 0, ran.text
            self.references[key] = predictions(out)
        return self.references[key]

    def run(self, case: Case) -> dict:
        out = self.work / re.sub(r"[^\w.-]+", "_", case.name)
        env = {**self.env, "CAMPAIGN_KEY": case.key} if case.key else {k: v for k, v in self.env.items()
                                                                        if k != "CAMPAIGN_KEY"}
        shown, found = [], {"case": case.name, "expect": case.expect}
        with FaultyServer(key=KEY, slow_seconds=case.slow_seconds) as server:
            if case.fault:
                server.cue(case.fault, start=case.start)
            kill_when = None
            if case.special == "kill_server":
                threading.Thread(target=self._kill_at, args=(server, CHECKED["score"] + 3), daemon=True).start()
            if case.special == "kill_seedscope":
                def kill_when():
                    return server.answered >= CHECKED["score"] + 3
            ran = in_terminal(sweep_args(server.url, out, case.extra), env, kill_when=kill_when)
            shown.append(ran.text)
            found.update(exit=ran.code, seconds=round(ran.seconds, 1), longest_silence=round(ran.longest_silence, 1))
            line = self._line(ran, out)
            found["line"] = line
            recorded_failed = out.exists() and "failed" in ExperimentStore.open(out).runs()["status"].tolist()
            resumed = None
            if case.expect in ("failed", "killed"):
                if case.special == "garbage_cache":
                    self._spoil_cache(out)
                if case.special == "kill_server":
                    server.start()
                server.fix()
                resumed = in_terminal(sweep_args(server.url, out, case.extra, resume=True), env)
                shown.append(resumed.text)
                found.update(resume_exit=resumed.code, longest_silence=round(max(ran.longest_silence,
                                                                                  resumed.longest_silence), 1))
            found["cache_bytes"] = (out / "responses.sqlite").stat().st_size if (out / "responses.sqlite").exists() else 0
        texts = shown + self._recorded_errors(out)
        crashed = ran.code < 0 and case.special != "kill_seedscope"  # killed by a signal it was not sent
        found["traceback"] = crashed or any(marker in text for text in texts
                                            for marker in ("Traceback (most recent call last)", "Fatal Python error"))
        found["key_found"] = self._key_found(case, out, texts)
        found["silent_wait"] = found["longest_silence"] > SILENT_SECONDS
        finished = (resumed or ran).code == 0 and out.exists() and self._all_done(out)
        found["resume_unfinished"] = case.expect in ("failed", "killed") and not finished
        found["wrong_result_accepted"] = (case.bad and ran.code == 0) or (
            finished and predictions(out) != self.reference(case.extra))
        found["unclear"] = not self._clear(case, ran, line, out, recorded_failed)
        return found

    @staticmethod
    def _kill_at(server: FaultyServer, answered: int) -> None:
        while server.answered < answered:
            time.sleep(0.01)
        server.stop()

    @staticmethod
    def _spoil_cache(out: Path) -> None:
        """The cache as an older seedscope left it: answers kept whole and unchecked (here, one log-probability short)."""
        with sqlite3.connect(out / "responses.sqlite") as connection:
            for key, text in connection.execute("SELECT key, response FROM responses").fetchall():
                answer = json.loads(text)
                answer["choices"][0]["logprobs"]["token_logprobs"].pop()
                connection.execute("UPDATE responses SET response = ? WHERE key = ?", (json.dumps(answer), key))

    @staticmethod
    def _line(ran: Ran, out: Path) -> str:
        """The line that says what happened: the error printed, else the failed run's recorded error, else the notes."""
        lines = [line.strip() for line in ran.text.splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("error:")]
        if errors:
            return errors[-1]
        if out.exists():
            failed = ExperimentStore.open(out).runs().query("status == 'failed'")
            if len(failed):
                return str(failed["error"].iloc[0])
        return " | ".join(line for line in lines if line.startswith("note:"))

    @staticmethod
    def _recorded_errors(out: Path) -> list[str]:
        if not out.exists():
            return []
        return [str(error) for error in ExperimentStore.open(out).runs()["error"].dropna()]

    @staticmethod
    def _all_done(out: Path) -> bool:
        runs = ExperimentStore.open(out).runs()
        return len(runs) > 0 and set(runs["status"]) == {"done"}

    @staticmethod
    def _key_found(case: Case, out: Path, texts: list[str]) -> bool:
        secrets = [secret for secret in {KEY, case.key} if secret]
        if any(secret in text for text in texts for secret in secrets):
            return True
        files = [path for path in out.rglob("*") if path.is_file()] if out.exists() else []
        return any(secret.encode() in path.read_bytes() for path in files for secret in secrets)

    @staticmethod
    def _clear(case: Case, ran: Ran, line: str, out: Path, recorded_failed: bool) -> bool:
        said = " ".join(line.split())
        if case.said is not None and case.said not in said:
            return False
        if "--predict generate" in said:  # the advice belongs only to a server that answered without log-probabilities
            return False
        if case.expect == "refused":
            return ran.code == 2 and not out.exists() and said.startswith("error:")
        if case.expect == "failed":
            return ran.code == 1 and recorded_failed
        if case.expect == "done":
            return ran.code == 0
        return True  # killed: nothing is said by a process killed; its --resume is what counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, default=REPO / "benchmarks" / "results" / "server-faults-campaign.json")
    parser.add_argument("--only", nargs="*", help="run only the cases whose name holds one of these words")
    options = parser.parse_args()
    chosen = [case for case in cases() if not options.only or any(word in case.name for word in options.only)]
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="seedscope-campaign-") as work:
        campaign = Campaign(Path(work))
        results = []
        for number, case in enumerate(chosen, 1):
            found = campaign.run(case)
            results.append(found)
            flags = [name for name in ("traceback", "wrong_result_accepted", "key_found", "silent_wait",
                                       "resume_unfinished", "unclear") if found[name]]
            print(f"{number:3d}/{len(chosen)} {case.name:48s} exit {found['exit']} {found['seconds']:6.1f} s "
                  f"{' '.join(flags) or 'ok'}: {found['line'][:150]}", flush=True)
    totals = {"cases": len(results), "tracebacks": sum(r["traceback"] for r in results),
              "wrong_results_accepted": sum(r["wrong_result_accepted"] for r in results),
              "keys_found": sum(r["key_found"] for r in results),
              "silent_waits_over_60s": sum(r["silent_wait"] for r in results),
              "resume_unfinished": sum(r["resume_unfinished"] for r in results),
              "resumed": sum(r["expect"] in ("failed", "killed") for r in results),
              "unclear_lines": sum(r["unclear"] for r in results),
              "longest_silence_s": max(r["longest_silence"] for r in results)}
    print(json.dumps(totals, indent=1))
    options.json.parent.mkdir(parents=True, exist_ok=True)
    options.json.write_text(json.dumps({"command": " ".join(sys.argv), "machine": platform.platform(),
                                        "minutes": round((time.time() - started) / 60, 1), "totals": totals,
                                        "cases": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
