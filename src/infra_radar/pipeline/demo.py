"""`radar demo`: the bundled sample imported, and a daily radar, a weekly report and the export written."""

from __future__ import annotations

from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

from ..config import Settings
from ..models import Window
from .analysis import analyze
from .home import atomic_write, open_store
from .imports import import_jsonl
from .reports import daily, export, weekly

DEMO_DAILY = ("2026-08-01T02:00:00Z", "2026-08-03T02:00:00Z")


DEMO_WEEK = ("acme/infer-npu", "2026-W31")


def sample_files() -> list[Path]:
    """The bundled demo sample exports."""
    folder = resources.files("infra_radar") / "defaults" / "sample"
    return sorted(Path(str(p)) for p in folder.iterdir() if p.name.endswith(".jsonl"))


def demo(settings: Settings, out_dir: Path) -> list[Path]:
    """Import the bundled sample into out_dir/demo.db and write a daily radar, a weekly report and the export."""
    import json

    from ..windows import iso_week, parse_when

    out_dir.mkdir(parents=True, exist_ok=True)
    db = out_dir / "demo.db"
    for stale in (db, db.with_name("demo.db-wal"), db.with_name("demo.db-shm")):
        stale.unlink(missing_ok=True)
    settings.db_url = f"sqlite:///{db.resolve()}"
    settings.repos = []  # the sample's invented repositories, not the ones radar.toml lists for the real store
    engine = open_store(settings)
    import_jsonl(settings, engine, sample_files())
    analyze(settings, engine)
    day = daily(settings, engine, parse_when(DEMO_DAILY[0]), parse_when(DEMO_DAILY[1]), out_dir=out_dir)
    week = weekly(settings, engine, DEMO_WEEK[0], iso_week(DEMO_WEEK[1]), out_dir=out_dir)
    everything = Window(datetime(1970, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC))
    data = export(settings, engine, everything)
    export_path = atomic_write(out_dir / "export.json", json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    engine.dispose()
    return [p for p in (day.path, week.path, export_path) if p is not None]
