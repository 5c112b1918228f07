#!/usr/bin/env python3
"""Issue 54 item 6's goals over the whole grid (docs/scale.md "The goals at 16-1 024 nodes"): the cost model at every
point, and the `arshim simulate` CSVs where they were simulated.

  goal_grid.py model --policy-program build/tools/policy/arshim-policy [--networks ideal,edr] [--nodes 16,64,256,1024]
                     [--ppn 1,4,16,28] [--sizes 8,64K,1M,4M] [--policy TABLE.toml] > model.csv
  goal_grid.py score [--model model.csv] [SIM.csv ...] [--misses]

`model` asks `arshim-policy predict` (docs/policy.md) for every (network, nodes, ppn, bytes) with the machine of
`arshim simulate`'s generated flat platform (100 Gbit/s; `model_params`: the network's table per message size,
computation charged at the rates the simulation charges): per selector the library's allreduce, the built-in table's
decision (the SMPI build decides with the selector's library's rules), a --policy table's (ARSHIM_POLICY_MODE=replace)
and every option `arshim simulate` can force on the layout (arshim tune's candidates and multileader-l16/-l28 where
the ppn allows). One CSV row per (network, nodes, ppn, bytes, selector, option).

`score` prints the goals as Markdown, per network: (1) the default against the better of the two libraries (the
lower of native-mpich and native-ompi), more than 3% slower is a miss; (2) from 1 MiB at ppn >= 4 on `ideal`, the
default's time / the link bound (goal 1.1); (3) the default (and the tuned table where a CSV has one) within 10% of
the best forced option, the library's allreduce included (goal: at 90% of points); (4) the model's median error
|model / simulated - 1| over every simulated row with a prediction (goal 15%). From the model CSV alone the figures
are the model's; from simulation CSVs they are simulated (the points simulated are listed).
"""
import argparse
import collections
import csv
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(__file__))))  # tools/: the arshim package
from arshim import network as networks  # noqa: E402
from arshim import simulate  # noqa: E402
from arshim.sizes import parse_size, size_text  # noqa: E402

SELECTORS = {"mpich": "mpich", "ompi": "openmpi"}  # selector -> the model's flavor
LINK_GBIT = 100.0
SLOWER = 1.03
WITHIN = 1.10
BOUND = 1.10
COLUMNS = ("network", "nodes", "ppn", "bytes", "selector", "option", "model_us", "decision")


def options(ppn, nodes, nbytes):
    """(name, ARSHIM_* settings) of the options arshim simulate can force at this point (simulate.config_sizes)."""
    out = []
    names = [n for n in simulate.candidate_names(ppn, nodes)]
    names += [f"multileader-l{k}" for k in (16, 32) if k <= ppn and f"multileader-l{k}" not in names]
    for name in names:
        option = simulate.forced_option(name, ppn, nodes)
        if option is None:
            continue
        _, settings, _, lo, hi = option
        if nbytes >= lo and (hi is None or nbytes <= hi):
            out.append((name, settings))
    return out


def predict(program, shapes, settings=None, policy=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARSHIM_")}
    env.update(settings or {})
    command = [program, "predict", "--shapes", "-"]
    if policy:
        command += ["--policy", os.path.abspath(policy)]
        env["ARSHIM_POLICY_MODE"] = "replace"
    done = subprocess.run(command, input=json.dumps({"shapes": shapes}), env=env, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"goal_grid.py: {program} predict: {done.stderr.strip()[-300:]}")
    return json.loads(done.stdout)["predictions"]


def cmd_model(args):
    writer = csv.writer(sys.stdout)
    writer.writerow(COLUMNS)
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    for name in args.networks.replace(",", " ").split():
        net = networks.network(name)
        values = dict(simulate.PLATFORM_DEFAULTS)
        values.update(net.platform)
        platform = {"link_gbit": float(values["link_gbit"]), "latency_us": float(values["latency_us"]),
                    "efficiency": float(values["bandwidth_efficiency"]),
                    "loopback_gbytes": float(values["loopback_gbytes"]),
                    "loopback_latency_us": float(values["loopback_latency_us"]), "topology": "flat", "network": net}
        points = [(n, p, b) for n in map(int, args.nodes.split(",")) for p in map(int, args.ppn.split(","))
                  for b in sizes]
        shapes = []
        for n, p, b in points:
            params = simulate.model_params(b, n, p, **platform)
            shapes.append({"nodes": n, "ppn": p, "bytes": b, "network": params.pop("network"), "params": params})
        base = predict(args.policy_program, shapes)
        tuned = predict(args.policy_program, shapes, policy=args.policy) if args.policy else None
        settings_seen = {}
        for (n, p, b) in points:
            for opt, settings in options(p, n, b):
                settings_seen.setdefault(opt, settings)
        forced = {opt: predict(args.policy_program, shapes, {k: v for k, v in s.items()})
                  for opt, s in settings_seen.items()}
        for i, (n, p, b) in enumerate(points):
            for sel, flavor in SELECTORS.items():
                entry = base[i]["flavors"][flavor]
                row = lambda option, us, decision="": writer.writerow(  # noqa: E731
                    [net.name, n, p, b, sel, option, "" if us is None else f"{us * 1 if us else 0:.3f}", decision])
                row("native", entry["native_us"])
                row("default", entry["builtin"]["us"], entry["builtin"]["decision"])
                if tuned:
                    t = tuned[i]["flavors"][flavor]["policy"]
                    row("tuned", t["us"], t["decision"])
                for opt, settings in options(p, n, b):
                    path = settings["ARSHIM_PATH"]
                    f = forced[opt][i]["flavors"][flavor]["paths"][path]
                    row(opt, f["us"], f["decision"])
    return 0


def read_model(path):
    """{(network, nodes, ppn, bytes, selector): {option: us}}"""
    out = collections.defaultdict(dict)
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["model_us"]:
                out[(r["network"], int(r["nodes"]), int(r["ppn"]), int(r["bytes"]), r["selector"])][r["option"]] = \
                    float(r["model_us"])
    return out


def read_sim(paths):
    """({key: {option: sim_us}}, {key: {option: model_us}}) from arshim simulate CSVs, keyed as read_model."""
    sim, model = collections.defaultdict(dict), collections.defaultdict(dict)
    for path in paths:
        with open(path) as f:
            for r in csv.DictReader(f):
                head, _, sel = r["config"].rpartition("-")
                if sel not in SELECTORS:
                    continue
                option = "native" if head == "native" else head.removeprefix("arshim-")
                key = (r["network"], int(r["nodes"]), int(r["ppn"]), int(r["bytes"]), sel)
                sim[key][option] = float(r["sim_us"])
                if r.get("model_us"):
                    model[key][option] = float(r["model_us"])
    return sim, model


def bound_us(nodes, nbytes):
    return simulate.bound_us(nodes, nbytes, LINK_GBIT)


def score(data, label, misses, out):
    """The goals over `data` ({key: {option: us}}), printed as Markdown under `label`."""
    nets = sorted({k[0] for k in data})
    for net in nets:
        keys = sorted(k for k in data if k[0] == net)
        g1, g3, g3t, g2 = [], [], [], []
        for key in keys:
            _, n, p, b, sel = key
            t = data[key]
            other = data.get(key[:4] + (("ompi" if sel == "mpich" else "mpich"),), {})
            natives = [v for v in (t.get("native"), other.get("native")) if v is not None]
            if "default" in t and natives:
                better = min(natives)
                g1.append((key, t["default"] / better, t["default"], better, t["native"]))
            forced = {o: v for o, v in t.items() if o not in ("default", "tuned")}
            if "default" in t and len(forced) > 1:
                best = min(forced, key=forced.get)
                g3.append((key, t["default"] / forced[best], best, forced[best], t["default"]))
                if "tuned" in t:
                    g3t.append((key, t["tuned"] / forced[best], best, forced[best], t["tuned"]))
            if net == "ideal" and p >= 4 and b >= (1 << 20) and "default" in t and n > 1:
                g2.append((key, t["default"] / bound_us(n, b), t["default"], bound_us(n, b)))
        print(f"\n### {label}, network `{net}`\n", file=out)
        n1 = sum(1 for x in g1 if x[1] > SLOWER)
        print(f"- goal 1, the default at most 3% slower than the better library: {len(g1) - n1} of {len(g1)} points "
              f"hold" + (f"; worst {max(g1, key=lambda x: x[1])[1]:.2f}x" if g1 else ""), file=out)
        if g2:
            n2 = sum(1 for x in g2 if x[1] > BOUND)
            print(f"- goal 2, within 1.1x the link bound (from 1 MiB, ppn >= 4): {len(g2) - n2} of {len(g2)} hold; "
                  f"default / bound {min(x[1] for x in g2):.2f}-{max(x[1] for x in g2):.2f}x", file=out)
        for name, g in (("default", g3), ("tuned", g3t)):
            if g:
                k = sum(1 for x in g if x[1] <= WITHIN)
                print(f"- goal 3, the {name} table within 10% of the best forced option: {k} of {len(g)} "
                      f"({100 * k / len(g):.0f}%)", file=out)
        # Per layout: the default / better library at each size.
        sizes = sorted({k[3] for k in keys})
        print(f"\nThe default / the better library ({label}; > {SLOWER} is a miss):\n", file=out)
        print("| nodes x ppn | selector | " + " | ".join(size_text(s) for s in sizes) + " |", file=out)
        print("|---|---" + "|---" * len(sizes) + "|", file=out)
        layouts = sorted({(k[1], k[2], k[4]) for k in keys})
        by = {(x[0][1], x[0][2], x[0][4], x[0][3]): x for x in g1}
        for n, p, sel in layouts:
            cells = []
            for s in sizes:
                x = by.get((n, p, sel, s))
                cells.append("" if x is None else (f"**{x[1]:.2f}**" if x[1] > SLOWER else f"{x[1]:.2f}"))
            print(f"| {n} x {p} | {sel} | " + " | ".join(cells) + " |", file=out)
        if misses:
            bad = [x for x in g1 if x[1] > SLOWER]
            if bad:
                print(f"\nGoal 1 misses ({label}, {net}): default us, better library us, own library us\n", file=out)
                for key, r, d, better, own in bad:
                    print(f"- {key[1]} x {key[2]} {size_text(key[3])} {key[4]}: {d:.1f} against {better:.1f} "
                          f"({r:.2f}x; own library {own:.1f}; {data[key].get('_decision', '')})", file=out)
            bad = [x for x in g3 if x[1] > WITHIN]
            if bad:
                print(f"\nGoal 3 misses ({label}, {net}): default us against the best option\n", file=out)
                for key, r, best, bv, d in bad:
                    print(f"- {key[1]} x {key[2]} {size_text(key[3])} {key[4]}: {d:.1f} against {best} {bv:.1f} "
                          f"({r:.2f}x)", file=out)
            if g2:
                print(f"\nGoal 2 ({label}, {net}): default / bound\n", file=out)
                for key, r, d, bnd in g2:
                    print(f"- {key[1]} x {key[2]} {size_text(key[3])} {key[4]}: {d:.1f} / {bnd:.1f} = {r:.2f}",
                          file=out)


def print_points(sim, model, out=sys.stdout):
    """Every simulated point: both libraries, both defaults, each default / the better library, the bound, and the
    model's figure for each default beside it."""
    for net in sorted({k[0] for k in sim}):
        print(f"\n### Simulated points, network `{net}` (us per call; default / the better library)\n", file=out)
        print("| nodes x ppn | bytes | native-mpich | native-ompi | default-mpich | default-ompi | / better, mpich "
              "| / better, ompi | bound | model: default-mpich, default-ompi |", file=out)
        print("|---|---|---|---|---|---|---|---|---|---|", file=out)
        points = sorted({k[1:4] for k in sim if k[0] == net})
        for n, p, b in points:
            m, o = sim.get((net, n, p, b, "mpich"), {}), sim.get((net, n, p, b, "ompi"), {})
            mm, mo = model.get((net, n, p, b, "mpich"), {}), model.get((net, n, p, b, "ompi"), {})
            natives = [v for v in (m.get("native"), o.get("native")) if v]
            better = min(natives) if natives else None
            cell = lambda v: "" if v is None else f"{v:,.1f}".replace(",", " ")  # noqa: E731
            ratio = lambda v: "" if v is None or not better else (  # noqa: E731
                f"**{v / better:.2f}**" if v / better > SLOWER else f"{v / better:.2f}")
            bound = bound_us(n, b)
            print(f"| {n} x {p} | {size_text(b)} | {cell(m.get('native'))} | {cell(o.get('native'))} | "
                  f"{cell(m.get('default'))} | {cell(o.get('default'))} | {ratio(m.get('default'))} | "
                  f"{ratio(o.get('default'))} | {cell(bound)} | {cell(mm.get('default'))}, {cell(mo.get('default'))} |",
                  file=out)


def cmd_score(args):
    if args.model:
        score(read_model(args.model), "model", args.misses, sys.stdout)
    if args.csv:
        sim, model = read_sim(args.csv)
        score(sim, "simulated", args.misses, sys.stdout)
        errors = collections.defaultdict(list)
        for key, options_ in model.items():
            for option, m in options_.items():
                s = sim[key].get(option)
                if s:
                    errors[key[0]].append(abs(m / s - 1))
        print_points(sim, model)
        print("\n### The model's error against the simulation\n")
        for net, e in sorted(errors.items()):
            print(f"- `{net}`: {len(e)} rows, median {100 * statistics.median(e):.1f}%, worst {100 * max(e):.1f}%")
        allv = [x for e in errors.values() for x in e]
        if allv:
            print(f"- all: {len(allv)} rows, median {100 * statistics.median(allv):.1f}%, worst {100 * max(allv):.1f}%")
        print("\nSimulated points (nodes x ppn: sizes, per network):\n")
        seen = collections.defaultdict(set)
        for key in sim:
            seen[(key[0], key[1], key[2])].add(key[3])
        for (net, n, p), s in sorted(seen.items()):
            print(f"- `{net}` {n} x {p}: {', '.join(size_text(x) for x in sorted(s))}")
    return 0


def main(argv):
    parser = argparse.ArgumentParser(prog="goal_grid.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("model")
    m.add_argument("--policy-program", required=True)
    m.add_argument("--networks", default="ideal,edr")
    m.add_argument("--nodes", default="16,64,256,1024")
    m.add_argument("--ppn", default="1,4,16,28")
    m.add_argument("--sizes", default="8,64K,1M,4M")
    m.add_argument("--policy")
    s = sub.add_parser("score")
    s.add_argument("--model")
    s.add_argument("--misses", action="store_true")
    s.add_argument("csv", nargs="*")
    args = parser.parse_args(argv)
    return cmd_model(args) if args.command == "model" else cmd_score(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
