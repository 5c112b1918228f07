#!/usr/bin/env python3
"""Checks the statistics log of a check_sharp run against what the program saw (run_sharp.sh --stats).

    check_sharp_stats.py OUTPUT_LOG STATS_JSON

The program's last line gives rank 0's calls by how they ran ("llt 28, sat 16, host 20, native 0"); every rank
runs every call the same way (the program checks that), so the log's SHARP counters, summed over ranks, are those
times the number of ranks. Each call's row must say the same: rows of the sharp path carry "sharp" (llt, sat,
host_<reason>), calls declined to native have reason sharp_unavailable. The summary on stderr has a sharp line.
"""
import json
import re
import sys


def main():
    output = open(sys.argv[1], encoding="utf-8", errors="replace").read()
    doc = json.load(open(sys.argv[2], encoding="utf-8"))
    problems = []
    m = re.search(r"check_sharp \S+: (\d+) ranks, \d+ calls \(llt (\d+), sat (\d+), host (\d+), native (\d+)\)",
                  output)
    if not m:
        print("check_sharp_stats: no check_sharp result line in the output")
        return 1
    ranks, llt, sat, host, native = (int(g) for g in m.groups())
    want = {"llt": llt * ranks, "sat": sat * ranks, "host": host * ranks, "unavailable": native * ranks}
    sharp = doc.get("sharp")
    if sharp is None:
        print("check_sharp_stats: the log has no sharp object")
        return 1
    for key, value in want.items():
        if sharp.get(key) != value:
            problems.append(f"sharp.{key} = {sharp.get(key)}, expected {value}")
    host_reasons = sum(v for k, v in sharp.items() if k.startswith("host_"))
    if host_reasons != sharp.get("host"):
        problems.append(f"host reasons add up to {host_reasons}, host = {sharp.get('host')}")

    rows = {"llt": 0, "sat": 0, "host": 0, "unavailable": 0}
    for row in doc["rows"]:
        if row.get("other"):
            problems.append("a row was folded into 'other'")
        elif row["path"] == "sharp":
            kind = row.get("sharp", "")
            if kind in ("llt", "sat"):
                rows[kind] += row["calls"]
            elif kind.startswith("host_"):
                rows["host"] += row["calls"]
                if sharp.get(kind, 0) == 0:
                    problems.append(f"a row ran as {kind} but that counter is 0")
            else:
                problems.append(f"a sharp row without its kind: {row}")
        elif row["reason"] == "sharp_unavailable":
            rows["unavailable"] += row["calls"]
    for key, value in want.items():
        if rows.get(key) != value:
            problems.append(f"rows count {rows.get(key)} {key} calls, expected {value}")

    line = re.search(r"^arshim\[0\] sharp: llt=(\d+) sat=(\d+) host=(\d+).* declined=(\d+);", output, re.M)
    if not line:
        problems.append("no 'arshim[0] sharp:' summary line")
    elif [int(g) for g in line.groups()] != [want["llt"], want["sat"], want["host"], want["unavailable"]]:
        problems.append(f"summary line {line.group(0)!r} disagrees with {want}")

    for p in problems:
        print(f"check_sharp_stats: {p}")
    if not problems:
        print(f"check_sharp_stats: log and summary agree with the program ({want})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
