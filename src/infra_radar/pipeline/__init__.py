"""The named stages in order, each taking the Settings and the store explicitly: import (imports.py, fetch.py)
-> analyse (analysis.py, relations.py) -> report and export (reports.py, card.py), with the home and store in
home.py and the bundled demo in demo.py. The only package that knows the sequence."""
