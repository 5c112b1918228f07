"""mpirun command lines on the rig, without side effects: the hosts and ranks per host (mapped by block: host i gets
ranks i*P .. i*P+P-1), the fake ssh, the transports and interfaces each MPI may use, the helpers preloaded into
MPICH ranks, and `wrap`'s rewriting of a complete mpirun command line."""
import hashlib

from . import Failure
from .plan import IFACE
from ..flavors import launcher_flavor
from ..launchers import program_of


# The rig's own variables are no ARShim settings: ARShim in the ranks would report them as unknown ARSHIM_* variables
# (rank 0 inherits the launcher's environment; `arshim run` forwards every ARSHIM_* variable).
RIG_VARIABLES = ("ARSHIM_BUILD_DIR", "ARSHIM_TEST_YIELD_LIB")


def launch_env(environ):
    """`env -u NAME...` of every rig variable in environ: every launch runs under it; the launchers reach the fake
    ssh through its wrapper (ssh_wrapper), which carries what the ssh needs."""
    argv = ["env"]
    for name in sorted(environ):
        if name.startswith("ARSHIM_CLUSTER_") or name in RIG_VARIABLES:
            argv += ["-u", name]
    return argv


def shell_quote(text):
    return "'" + text.replace("'", "'\\''") + "'"


def ssh_wrapper(names, fake_ssh, ssh_env):
    """(path, text) of the fake ssh as the launchers run it: a script in the state directory that runs
    tools/cluster/ssh with this rig's state and the caller's ARSHIM_CLUSTER_SSH_ENV, since the launcher's
    environment no longer has them (launch_env). One file per (ssh script, ARSHIM_CLUSTER_SSH_ENV)."""
    key = hashlib.sha256(f"{fake_ssh}\n{ssh_env}".encode()).hexdigest()[:12]
    text = ("#!/bin/sh\n"
            f"# arshim-cluster: the fake ssh of rig {names.prefix}, as its launchers run it\n"
            f"ARSHIM_CLUSTER_STATE={shell_quote(names.state)} ARSHIM_CLUSTER_SSH_ENV={shell_quote(ssh_env)} "
            f"exec {shell_quote(fake_ssh)} \"$@\"\n")
    return names.state_file(f"ssh-{key}"), text


def host_list(names, hosts, np, ppn):
    need = (np + ppn - 1) // ppn
    if need > hosts:
        raise Failure(f"{np} ranks at {ppn} per host need {need} hosts; the rig has {hosts}", 2)
    return ",".join(f"{names.host(i)}:{ppn}" for i in range(need))


def mpirun_command(names, hosts, flavor, np, ppn, ssh):
    """mpirun.FLAVOR with the rig's options, for np ranks at ppn per host."""
    hostlist = host_list(names, hosts, np, ppn)
    if flavor == "mpich":
        # ch4:ucx: UCX sees one boot id on every virtual host and would use shared memory between them; only TCP
        # over the host's NIC (and self) may be used. Within a host MPICH's own POSIX shared memory serves.
        return ["mpirun.mpich", "-launcher", "ssh", "-launcher-exec", ssh, "-hosts", hostlist, "-n", str(np),
                "-ppn", str(ppn), "-genv", "UCX_TLS", "tcp,self", "-genv", "UCX_NET_DEVICES", IFACE,
                "-genv", "UCX_WARN_UNUSED_ENV_VARS", "n"]
    if flavor == "openmpi":
        return ["mpirun.openmpi", "--host", hostlist, "-n", str(np), "--map-by", f"ppr:{ppn}:node", "--bind-to",
                "none", "--mca", "plm_rsh_agent", ssh, "--mca", "plm_rsh_no_tree_spawn", "1",
                "--mca", "pml", "ob1", "--mca", "btl", "tcp,self,vader", "--mca", "btl_tcp_if_include", IFACE,
                "--mca", "oob_tcp_if_include", IFACE, "--mca", "mpi_yield_when_idle", "1"]
    raise Failure(f"unknown MPI flavor '{flavor}' (mpich, openmpi)", 2)


def rank_variables(flavor, assignments):
    """`-x VAR=VAL` options of `run` as the flavor's mpirun takes them."""
    out = []
    for v in assignments:
        if flavor == "openmpi":
            out += ["-x", v]
        else:
            name, _, value = v.partition("=")
            out += ["-genv", name, value if _ else v]
    return out


def add_mpich_helpers(args, helpers):
    """Under MPICH, make sure the helpers (colon separated) reach the ranks: if the mpirun arguments already carry
    `-genv LD_PRELOAD X` (e.g. from `arshim run`), X becomes X:helpers, else `-genv LD_PRELOAD helpers` is added."""
    out, found, i = [], False, 0
    while i < len(args):
        if args[i] in ("-genv", "-env") and i + 2 < len(args) and args[i + 1] == "LD_PRELOAD":
            out += [args[i], "LD_PRELOAD", args[i + 2] + (":" + helpers if helpers else "")]
            found, i = True, i + 3
        else:
            out.append(args[i])
            i += 1
    return out if found or not helpers else ["-genv", "LD_PRELOAD", helpers] + out


def dedupe_preload(args):
    """Drops repeated and empty entries from every `-genv LD_PRELOAD` list (a driver may add the yield helper
    itself), keeping the first of each."""
    out = list(args)
    for i in range(1, len(out) - 1):
        if out[i] == "LD_PRELOAD" and out[i - 1] == "-genv":
            out[i + 1] = ":".join(dict.fromkeys(p for p in out[i + 1].split(":") if p))
    return out


class Wrapped:
    """A complete mpirun command line taken apart by `wrap`: its flavor, its rank count (None: not given) and its
    other arguments, without what the rig sets itself."""

    def __init__(self, flavor, np, rest):
        self.flavor, self.np, self.rest = flavor, np, rest


def parse_wrapped(command, flavor_of=launcher_flavor):
    """mpirun.F [ARGS] PROG [ARGS] -> Wrapped. The launcher's own mapping (--oversubscribe) and yield setting
    (--mca mpi_yield_when_idle: Open MPI refuses a parameter given twice) give way to the rig's. Only the launcher's
    options are read: the program's own arguments (a solver's `--n 64`) pass through untouched."""
    launcher = command[0]
    flavor = flavor_of(launcher)
    if flavor is None:
        raise Failure(f"wrap: {launcher} is neither mpirun.mpich nor mpirun.openmpi", 2)
    program = program_of(command)
    end = len(command) if program is None else program
    np, rest, i = None, [], 1
    while i < end:
        word = command[i]
        if word in ("-n", "-np", "--n", "--np"):
            if i + 1 >= len(command):
                raise Failure(f"wrap: {word} needs a value", 2)
            np, i = command[i + 1], i + 2
        elif word == "--oversubscribe":
            i += 1
        elif word in ("--mca", "-mca"):
            if i + 2 >= len(command):
                raise Failure(f"wrap: {word} needs a name and a value", 2)
            if command[i + 1] != "mpi_yield_when_idle":
                rest += command[i:i + 3]
            i += 3
        else:
            rest.append(word)
            i += 1
    return Wrapped(flavor, np, rest + command[end:])
