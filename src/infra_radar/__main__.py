"""`python -m infra_radar` runs the `radar` command."""

from .cli import main

main()
