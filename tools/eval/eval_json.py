"""One JSON reader for the make eval tables (answers.py, direction-table.py,
where_table.py): a run's report or truth, None when it is missing or not
JSON (a run whose pipeline failed is a miss, not a crash)."""
import json


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
