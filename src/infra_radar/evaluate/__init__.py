"""Judgment measured against the team: labels read and checked (labels.py), scored and reported (score.py)."""
