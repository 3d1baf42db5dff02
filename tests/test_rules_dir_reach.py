"""The user's rules directory reaches every rule file, also those read where no settings are in hand (the zh
word rules, the conclusion, checklist and dive rules, the claim and assertion rules): load_settings makes the
directory active, and the next settings without one bring the packaged tables back."""

from __future__ import annotations

from pathlib import Path

from infra_radar.config import load_settings, rule_data
from infra_radar.render import mechanism, saying
from infra_radar.render.checklist import checklist_rules
from infra_radar.render.why import dive_rules


def _say(title: str) -> str:
    actions, _ = mechanism.read(title, "")
    return str(saying.say(actions, "zh"))


def test_a_rules_dir_reaches_the_rules_read_without_settings(radar_home: Path, tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    # the user's own Chinese for two field words (a table of zh_words.toml replaced whole)
    (rules / "zh_words.toml").write_text('[glossary]\ndescription = "说明文字"\ntext = "正文"\n', encoding="utf-8")
    (rules / "checklists.toml").write_text('model_families = ["Acme"]\n', encoding="utf-8")
    (rules / "dives.toml").write_text('[measure]\nkinds = ["docs"]\n', encoding="utf-8")
    packaged = _say("the returned text does not contain a video description")
    assert "文本" in packaged and "描述" in packaged, packaged
    packaged_families = list(checklist_rules()["model_families"])
    radar_home.mkdir(parents=True, exist_ok=True)
    (radar_home / "radar.toml").write_text(f'rules_dir = "{rules}"\n', encoding="utf-8")
    load_settings()
    said = _say("the returned text does not contain a video description")
    assert "正文" in said and "说明文字" in said, said
    assert checklist_rules()["model_families"] == ["Acme"]
    assert rule_data("dives")["measure"] == {"kinds": ["docs"]}
    assert dive_rules()["measure"] == {"kinds": ["docs"]}
    assert "cause" in dive_rules()  # the tables the user did not copy keep the packaged values
    # settings without a rules directory: the packaged tables again
    (radar_home / "radar.toml").write_text("", encoding="utf-8")
    load_settings()
    assert _say("the returned text does not contain a video description") == packaged
    assert list(checklist_rules()["model_families"]) == packaged_families
