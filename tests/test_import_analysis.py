"""Imports analyse the batches they save in forked workers (pipeline.analysis.alongside): the same analyses as a
later `radar analyze`, nothing left for it, small imports untouched, and an analysis fault never fails the import."""

from __future__ import annotations

import json

from infra_radar.analyse import item as item_module
from infra_radar.analyse.rules import RuleSet
from infra_radar.pipeline import analysis
from infra_radar.pipeline.analysis import analyze
from infra_radar.pipeline.home import open_store
from infra_radar.pipeline.imports import import_jsonl
from infra_radar.pipeline.reports import export
from infra_radar.store import queries

EXPORTS = ["verl-project+verl@release+v0.8.0.jsonl.gz", "vllm-project+vllm-omni.jsonl.gz"]


def _import(settings, shared_data, monkeypatch, on: bool):
    monkeypatch.setenv("RADAR_ANALYSE_ON_IMPORT", "1" if on else "0")
    engine = open_store(settings)
    results = import_jsonl(settings, engine, [shared_data / "git" / name for name in EXPORTS])
    pending = queries.count_to_analyse(engine, RuleSet.version_of(settings))
    inserted = sum(r.stats.inserted for r in results)
    assert [r.analysed for r in results] == ([0, inserted] if on else [0, 0])  # the command's count, on the last
    analyze(settings, engine)
    data = json.dumps(export(settings, engine, None), sort_keys=True)
    engine.dispose()
    return pending, data


def test_import_analyses_what_it_saved_as_analyze_would(settings, shared_data, monkeypatch, tmp_path):
    monkeypatch.setattr(analysis, "BATCH", 20)  # several worker batches from these two small exports
    pending_on, alongside = _import(settings, shared_data, monkeypatch, on=True)
    settings.db_url = f"sqlite:///{tmp_path / 'other.db'}"  # under PostgreSQL too: the stores give one export
    pending_off, separate = _import(settings, shared_data, monkeypatch, on=False)
    assert pending_on == 0  # the import analysed every item it saved
    assert pending_off > 200
    assert alongside == separate


def test_what_the_workers_were_not_handed_when_the_import_ends_is_analysed_by_the_importer(settings, shared_data,
                                                                                          monkeypatch, tmp_path):
    """At most two batches per worker are handed over; the rest, once the import has read its source, are analysed
    by the importing process (not `nice`d), so a busy machine never leaves it waiting for starved workers."""
    import os

    monkeypatch.setattr(analysis, "BATCH", 20)  # 218 items: 11 batches, 4 of them handed to 2 workers at first
    monkeypatch.setenv("RADAR_ANALYSE_ON_IMPORT", "1")
    log, read = tmp_path / "analysed-by", queries.items_by_id

    def logged(store, ids):  # each batch's read, in whichever process analyses it
        with open(log, "a") as fh:  # from the workers too: they inherit the patched module on fork
            fh.write(f"{os.getpid()}\n")
        return read(store, ids)

    monkeypatch.setattr(queries, "items_by_id", logged)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)  # two workers, whatever the machine
    engine = open_store(settings)
    results = import_jsonl(settings, engine, [shared_data / "git" / EXPORTS[1]])
    assert results[0].stats.inserted == 218
    pids = log.read_text().split()
    assert len(pids) == 11 and results[0].analysed == 218
    assert 0 < pids.count(str(os.getpid())) <= 11 - 4, pids  # the importer took what was not handed over
    assert queries.count_to_analyse(engine, RuleSet.version_of(settings)) == 0
    engine.dispose()


def test_a_small_import_leaves_its_items_to_analyze(settings, shared_data, monkeypatch):
    loads = []
    real = RuleSet.load.__func__

    monkeypatch.setattr(RuleSet, "load", classmethod(lambda cls, s: loads.append(1) or real(cls, s)))
    monkeypatch.setenv("RADAR_ANALYSE_ON_IMPORT", "1")
    engine = open_store(settings)
    import_jsonl(settings, engine, [shared_data / "git" / EXPORTS[0]])  # 43 items: under one worker batch
    assert not loads  # no rules loaded, no worker forked
    assert queries.count_to_analyse(engine, RuleSet.version_of(settings)) == 43
    engine.dispose()


def test_an_analysis_fault_never_fails_the_import(settings, shared_data, monkeypatch):
    monkeypatch.setattr(analysis, "BATCH", 20)
    monkeypatch.setenv("RADAR_ANALYSE_ON_IMPORT", "1")

    def broken(*_args, **_kw):
        raise RuntimeError("a rule bug")

    monkeypatch.setattr(item_module, "analyse_item", broken)  # inherited by the forked workers
    engine = open_store(settings)
    results = import_jsonl(settings, engine, [shared_data / "git" / EXPORTS[1]])
    assert results[0].stats.inserted == 218
    assert queries.count_to_analyse(engine, RuleSet.version_of(settings)) == 218  # left to `analyze`
    engine.dispose()


def test_a_killed_analysis_leaves_no_worker_behind(shared_data, monkeypatch):
    import os
    import subprocess
    import sys

    monkeypatch.setenv("RADAR_ANALYSE_ON_IMPORT", "0")
    radar = [sys.executable, "-m", "infra_radar"]
    done = subprocess.run([*radar, "import-jsonl", str(shared_data / "git" / "verl-project+verl.jsonl.gz")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    # 1,000+ items to analyse: forked workers; the parent kills itself when it has saved its first batch
    killed = subprocess.run([*radar, "analyze"], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "RADAR_KILL_AT": "analyze.saved:1"})
    assert killed.returncode == -9
    # the run returned at all: its stderr reached end of file, so no worker outlived the parent holding it open;
    # and none of them finished its batch to find the pipe closed
    assert "Traceback" not in killed.stderr and "BrokenPipeError" not in killed.stderr, killed.stderr
    rerun = subprocess.run([*radar, "analyze"], capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0 and "analysed" in rerun.stdout, rerun.stderr


def test_the_import_says_how_many_items_it_analysed(shared_data, monkeypatch):
    from click.testing import CliRunner

    from infra_radar.cli import main

    monkeypatch.setattr(analysis, "BATCH", 20)
    monkeypatch.setenv("RADAR_ANALYSE_ON_IMPORT", "1")
    result = CliRunner().invoke(main, ["import-jsonl", str(shared_data / "git" / EXPORTS[1])])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "analysed 218 item(s) while importing"
    again = CliRunner().invoke(main, ["analyze"])
    assert again.stdout.startswith("analysed 0 item(s)")
