"""Issue 42, repositories: `repo remove` takes a repository out of every report (its data kept unless --purge,
which says how many items it deletes first); importing a repository radar.toml does not list warns and says how to
add it; `radar show` and `repo add` accept a GitHub address and OWNER/NAME#N."""

from __future__ import annotations

from click.testing import CliRunner

from infra_radar.cli import main

from .test_repo_cli import USER_CONFIG


def radar(*args: str, ok: bool = True):
    result = CliRunner().invoke(main, list(args))
    assert (result.exit_code == 0) == ok, result.output
    return result


def _configured(radar_home, tmp_path):
    radar_home.mkdir(parents=True, exist_ok=True)
    (radar_home / "radar.toml").write_text(USER_CONFIG.format(out=tmp_path / "out"), encoding="utf-8")


WINDOW = ("--since", "2026-08-01", "--until", "2026-08-04")


def test_a_removed_repository_is_in_no_report_and_purge_deletes_it(radar_home, tmp_path, sample_store):
    _configured(radar_home, tmp_path)
    before = radar("daily", *WINDOW).stdout
    assert "acme/trainer" in before
    removed = radar("repo", "remove", "acme/trainer")
    after = radar("daily", *WINDOW).stdout
    assert "acme/trainer" not in after, after  # not in the scope line, not in a row
    assert "out of every report" in removed.stdout
    assert radar("show", "acme/trainer#440").stdout  # its data stays, read by name
    purged = radar("repo", "remove", "acme/trainer", "--purge")
    assert "is not in radar.toml" not in purged.stdout
    count = int(purged.stdout.split("purging ", 1)[1].split(" ", 1)[0])
    assert count > 0 and f"purged acme/trainer: {count} item(s) deleted" in purged.stdout, purged.stdout
    assert "acme/trainer" not in radar("repo", "list").stdout
    assert "not in the store" in radar("show", "acme/trainer#440", ok=False).output


def test_importing_a_repository_radar_toml_does_not_list_warns(radar_home, tmp_path):
    from infra_radar.pipeline.demo import sample_files

    _configured(radar_home, tmp_path)
    # acme/trainer's export under a typo: the items are kept, and the warning says how to add it or drop it
    text = next(p for p in sample_files() if "trainer" in p.name).read_text(encoding="utf-8")
    typo = tmp_path / "typo.jsonl"
    typo.write_text(text.replace('"acme/trainer"', '"acme/trainerX"', 1), encoding="utf-8")
    result = radar("import-jsonl", str(typo))
    assert "warning: acme/trainerX is not in radar.toml's [[repos]]" in result.output
    assert "radar repo add acme/trainerX" in result.output and "--purge" in result.output
    assert "acme/trainerX" not in radar("daily", *WINDOW).stdout
    # a configured one says nothing
    assert "warning" not in radar("import-jsonl", *map(str, sample_files())).output


def test_show_and_repo_add_take_a_github_address_and_an_item(radar_home, tmp_path, sample_store):
    card = radar("show", "https://github.com/acme/trainer/pull/440").stdout
    assert card == radar("show", "acme/trainer#440").stdout
    _configured(radar_home, tmp_path)
    added = radar("repo", "add", "https://github.com/acme/other/pull/12/files")
    assert "added acme/other to" in added.stdout
    again = radar("repo", "add", "https://github.com/acme/other.git")
    assert "acme/other is already configured" in again.stdout


def test_a_typo_import_after_radar_init_warns_and_stays_out_of_the_daily(radar_home, tmp_path):
    """`radar init` writes the packaged [[repos]]: that list is the user's, so a repository it does not name (a
    typo of THUDM/slime) warns on import and is in no report."""
    from infra_radar.pipeline.demo import sample_files

    radar("init")
    text = next(p for p in sample_files() if "trainer" in p.name).read_text(encoding="utf-8")
    typo = tmp_path / "typo.jsonl"
    typo.write_text(text.replace('"acme/trainer"', '"THUDM/slimeX"', 1), encoding="utf-8")
    result = radar("import-jsonl", str(typo))
    assert "warning: THUDM/slimeX is not in radar.toml's [[repos]]" in result.output, result.output
    assert "THUDM/slimeX" not in radar("daily", *WINDOW).stdout
