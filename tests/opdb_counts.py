"""Sum the example counts that tests/test_opdb.py writes (MPSGRAPH_OPDB_COUNTS=path gives one
JSON file per pytest-xdist worker, path.gw0, path.gw1, ... or path.main) and print them per op
family and device: `python tests/opdb_counts.py scratch/deep.json.*`."""

from __future__ import annotations

import json
import sys
from collections import Counter


def main(paths: list[str]) -> int:
    total: Counter[str] = Counter()
    for p in paths:
        with open(p) as f:
            total.update(json.load(f))
    families = sorted({k.split("/")[0] for k in total})
    devices = sorted({k.split("/")[1] for k in total})
    print("| family | " + " | ".join(devices) + " |")
    print("|---|" + "---:|" * len(devices))
    for fam in families:
        print(f"| {fam} | " + " | ".join(str(total.get(f"{fam}/{d}", 0)) for d in devices)
              + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
