"""The `radar` command: the root group, assembled from one module per command group.

Each command module defines its commands with plain click decorators and lists them in COMMANDS; only this
module knows them all, and no command module imports the group back.
"""

from __future__ import annotations

from pathlib import Path

import click

from .. import __version__
from . import doctor, evaluate, fetch, imports, label, llm, page, publish, repo, reports, watch
from .common import Context, RadarGroup, Seconds


@click.group(cls=RadarGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--config", type=click.Path(dir_okay=False, path_type=Path),
              help="Config file (default: $RADAR_HOME/radar.toml).")
@click.option("--db", help="Store URL, e.g. sqlite:///radar.db or postgresql+psycopg://... (default: config).")
@click.option("--wait", type=Seconds(), metavar="SECONDS",
              help="How long a writing command waits while another one writes the store "
                   "(default: lock_timeout, RADAR_LOCK_TIMEOUT, 600).")
@click.version_option(__version__, prog_name="radar")
@click.pass_context
def main(ctx: click.Context, config: Path | None, db: str | None, wait: float | None) -> None:
    """infra-radar: which upstream AI-infra changes matter to your team, every morning."""
    from ..config import check_env

    check_env()
    ctx.obj = Context(config, db, wait)


for _module in (imports, reports, watch, repo, label, fetch, page, publish, llm, evaluate, doctor):
    for _command in _module.COMMANDS:
        main.add_command(_command)
