"""infra-radar: which upstream AI-infrastructure changes matter to your team, every morning."""

__version__ = "0.1.0"
