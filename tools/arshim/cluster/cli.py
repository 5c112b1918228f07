"""The command line of `arshim cluster` (tools/cluster/arshim-cluster): its commands, options, messages and exit
statuses (0 ok, 1 failure, 2 bad usage, 77 the rig cannot run here: a SKIP line with the reason)."""
import os
import re
import signal
import sys

from . import Failure
from . import plan
from .jobs import Jobs
from .system import System
from ..flavors import FLAVORS
from ..sizes import parse_size
from ..text import one_line

TOOLS_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))

USAGE = """\
arshim-cluster: an emulated multi-host cluster on one machine, for running MPI programs (with or without ARShim)
across hosts that the MPI library itself believes are different, over links whose bandwidth is set.

  arshim cluster up [--hosts N] [--link 1gbit|10gbit|none|RATE] [--mtu BYTES] [--watch PID]
  arshim cluster run [--hosts N] [--ppn P] [--link L] [--mpi F] [--native] [--timeout S] [-x VAR=VAL] -- PROG [ARGS]
  arshim cluster mpirun --mpi F [--ppn P] [--np N] -- [MPIRUN ARGS] PROG [ARGS]
  arshim cluster verify [--mpi mpich|openmpi|both] [--ppn P] [--bytes B]
  arshim cluster wrap [--ppn P] -- mpirun.F -n N ARGS...        (launcher prefix for benchmark drivers)
  arshim cluster status | shape [--link L] [--mtu BYTES] | exec HOST -- CMD | clean | down | check
  arshim cluster --name NAME COMMAND ...                          (another rig; default $ARSHIM_CLUSTER_NAME or arshim)

See docs/cluster.md. Root only (network namespaces); everything the rig creates lives in namespaces named
$ARSHIM_CLUSTER_NAME-* (default arshim-h0.., arshim-sw) and in /run/arshim-cluster/$ARSHIM_CLUSTER_NAME.
Nothing in the machine's own network namespace, routes or /etc is touched.
Commands:
  check     exit 0 if the rig can run here, 77 (with the reason) if not: root, ip netns, unshare, nsenter, tc tbf
  up        create N virtual hosts (2..8, default 2) and the switch, shape the links (default 10gbit) with an MTU
            (default 1500, the Ethernet default; 9000 for jumbo frames); idempotent.
            --watch PID: tear the rig down by itself when process PID dies (for scripts that may be killed)
  down      kill every process left in the rig's namespaces (by PID), delete the namespaces; idempotent
  status    hosts, addresses, link shaping, interface byte counters, processes
  shape     [--link 1gbit|10gbit|none|RATE] [--mtu BYTES]: reshape every link, both directions (RATE: a tc rate,
            e.g. 2500mbit), and/or set every interface's MTU (1280..65535; TCP's headers and acknowledgements
            take ~6% of a shaped 1 Gbit/s link at 1500, ~1% at 9000: docs/cluster.md)
  exec      HOST -- CMD...: run CMD on a virtual host (h0.. or arshim-h0..) with the caller's environment
  ssh       HOST CMD...: the fake ssh the launchers use (login-like environment)
  clean     kill processes left on the virtual hosts by a killed or hung run (by PID); keeps the rig up
  mpirun    --mpi F [--ppn P] [--np N] [--yield|--no-yield] -- ARGS...: mpirun.F on host 0 with the rig's options
            (hosts, fake ssh, transports, interfaces) followed by ARGS; no ARShim unless ARGS preload it.
            This is the launcher prefix for benchmarks.
  wrap      [--ppn P] -- mpirun.F -n N ARGS...: run a complete mpirun command line on the rig (the launcher
            prefix for `arshim bench allreduce --wrap`): the rig's options are inserted after mpirun.F
  run       [--hosts N] [--ppn P] [--link L] [--mpi F] [--native] [--timeout S] [-x VAR=VAL]... -- PROG ARGS...
            run PROG on the rig with ARShim preloaded (through `arshim run`; --native: without it). Brings the
            rig up (and down again afterwards) if it is not up with N hosts; reshapes links if --link is given.
  verify    [--mpi mpich|openmpi|both] [--ppn P] [--bytes B]: prove that each rank's MPI_COMM_TYPE_SHARED node is its
            virtual host and that allreduce traffic crosses the links (interface byte counters), and measure the
            link rate and latency the rig really gives (round trip; B bytes both ways over one plain TCP connection).
Environment: ARSHIM_CLUSTER_NAME (namespace prefix, default arshim), ARSHIM_CLUSTER_SUBNET (default 10.99.0),
  ARSHIM_BUILD_DIR (default <source>/build), ARSHIM_CLUSTER_MPICH_FINALIZE (see docs/cluster.md).
"""
COMMANDS = "up, down, status, shape, exec, ssh, clean, mpirun, wrap, run, verify, check"
SHAPE_USAGE = "usage: shape [--link 1gbit|10gbit|none|RATE] [--mtu BYTES]"
RUN_USAGE = "usage: arshim cluster run [--hosts N] [--ppn P] [--link L] [--mpi F] [--native] -- PROG ARGS"


def parse(args, values=(), flags=None, unknown=None, stop_at_word=False, dashdash=True):
    """Options before `--` (dashdash; or before the first word that is no option, with stop_at_word): (dict, the
    rest). values: options that take a value (`-x` may repeat: a list); flags: option -> (key, value), where the key
    "help" ends the parsing; unknown(word) -> the Failure for anything else."""
    got, flags, i = {}, flags or {}, 0
    while i < len(args):
        word = args[i]
        if word == "--" and dashdash:
            return got, args[i + 1:]
        if word in values:
            if i + 1 >= len(args):
                raise Failure(f"{word} needs a value", 2)
            if word == "-x":
                got.setdefault(word, []).append(args[i + 1])
            else:
                got[word] = args[i + 1]
            i += 2
        elif word in flags:
            key, value = flags[word]
            got[key] = value
            if key == "help":
                return got, []
            i += 1
        elif stop_at_word:
            return got, args[i:]
        else:
            raise unknown(word)
    return got, []


def move_name(argv):
    """`--name NAME` selects the rig, before the command or right after it (the launcher cannot pass an option
    first): (name or None, the other arguments). An empty name is refused: it would select the default rig."""
    if len(argv) >= 2 and argv[1] == "--name" and not argv[0].startswith("-"):
        argv = ["--name", argv[2] if len(argv) > 2 else ""] + argv[:1] + argv[3:]
    if argv[:1] == ["--name"]:
        if len(argv) < 2 or not argv[1]:
            raise Failure("--name needs a value", 2, plain=True)
        return argv[1], argv[2:]
    return None, argv


def count(option, value):
    return plan.check_count(option, value) if value is not None else None


def cmd_up(rig, args):
    o, _ = parse(args, ("--hosts", "--link", "--mtu", "--watch"),
                 unknown=lambda w: Failure(f"up: unknown option '{w}'", 2), dashdash=False)
    hosts, link, mtu = o.get("--hosts", "2"), o.get("--link", "10gbit"), o.get("--mtu", "1500")
    # The options before the prerequisites (which create and delete a probe namespace) and the lock.
    plan.check_hosts(hosts)
    plan.rate_of(link)
    plan.check_mtu(mtu)
    rc = rig.check_prereqs()
    if rc:
        return rc
    rig.take_lock()
    return rig.up(hosts, link, mtu, o.get("--watch"))


def cmd_down(rig, args):
    rig.take_lock()
    if args[:1] == ["--if-instance"]:
        return rig.down(args[1] if len(args) > 1 else "")
    return rig.down()


def cmd_shape(rig, args):
    rig.take_lock()
    rig.require_up(None)
    o, _ = parse(args, ("--link", "--mtu"), unknown=lambda w: Failure(SHAPE_USAGE, 2), dashdash=False)
    if not o:
        raise Failure(SHAPE_USAGE, 2)
    # Both values before either is applied (a bad --link after a new MTU would leave the rig half reshaped).
    if "--link" in o:
        plan.rate_of(o["--link"])
    if "--mtu" in o:
        plan.check_mtu(o["--mtu"])
    return rig.shape(o.get("--link"), o.get("--mtu"))


def cmd_mpirun(rig, args):
    o, rest = parse(args, ("--mpi", "--ppn", "--np"), {"--yield": ("yield", True), "--no-yield": ("yield", False)},
                    lambda w: Failure(f"mpirun: unknown option '{w}' (put mpirun's own arguments after --)", 2))
    return rig.mpirun(o.get("--mpi"), count("--ppn", o.get("--ppn", "1")), count("--np", o.get("--np")),
                      o.get("yield", True), rest)


def cmd_wrap(rig, args):
    o, rest = parse(args, ("--ppn",), {"--no-yield": ("yield", False)}, stop_at_word=True)
    return rig.wrap(count("--ppn", o.get("--ppn", "1")), o.get("yield", True), rest)


def cmd_run(rig, args):
    o, rest = parse(args, ("--hosts", "--ppn", "--link", "--mpi", "--timeout", "-x"),
                    {"--native": ("native", True), "--no-shim": ("native", True), "--no-yield": ("yield", False),
                     "-h": ("help", True), "--help": ("help", True)},
                    lambda w: Failure(f"run: unknown option '{w}' ({RUN_USAGE})", 2))
    if o.get("help"):
        sys.stdout.write(USAGE)
        return 0
    if not rest:
        raise Failure("run: no program (arshim cluster run --hosts 2 --ppn 2 -- ./app)", 2)
    # Every option before anything is brought up (a bad one found after `up` would cost the rig's start-up).
    if "--hosts" in o:
        plan.check_hosts(o["--hosts"])
    if "--link" in o:
        plan.rate_of(o["--link"])
    if o.get("--mpi", FLAVORS[0]) not in FLAVORS:
        raise Failure(f"unknown MPI flavor '{o['--mpi']}' (mpich, openmpi)", 2)
    if "--timeout" in o:
        count("--timeout", o["--timeout"])
    for assignment in o.get("-x", []):
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(=.*)?", assignment, re.S):
            raise Failure(f"-x '{assignment}': not VAR=VALUE (or VAR, this environment's value)", 2)
    rig.take_lock()
    return rig.run(rest, o.get("--hosts"), count("--ppn", o.get("--ppn", "1")), o.get("--link"), o.get("--mpi"),
                   o.get("native", False), o.get("--timeout"), o.get("-x", []), o.get("yield", True))


def cmd_verify(rig, args):
    o, _ = parse(args, ("--mpi", "--ppn", "--bytes", "--reps"),
                    unknown=lambda w: Failure(f"verify: unknown option '{w}'", 2), dashdash=False)
    flavor = o.get("--mpi", "both")
    flavors = FLAVORS if flavor == "both" else (flavor,)
    if not set(flavors) <= set(FLAVORS):
        raise Failure(f"unknown MPI flavor '{flavor}' (mpich, openmpi)", 2)
    n = 16 << 20
    if "--bytes" in o:
        try:
            n = parse_size(o["--bytes"])
        except ValueError:
            raise Failure(f"bad size '{o['--bytes']}' (e.g. 4M, 64K)", 2) from None
    rig.take_lock()
    return rig.verify(flavors, count("--ppn", o.get("--ppn", "2")), n, count("--reps", o.get("--reps", "4")))


def cmd_ssh(rig, args):
    rig.system.execv([rig.fake_ssh] + args)


COMMAND_FUNCTIONS = {
    "up": cmd_up, "down": cmd_down, "status": lambda rig, args: rig.status(), "shape": cmd_shape,
    "exec": lambda rig, args: rig.exec_(args),
    "ssh": cmd_ssh, "clean": lambda rig, args: rig.clean(), "mpirun": cmd_mpirun, "wrap": cmd_wrap, "run": cmd_run,
    "verify": cmd_verify,
}


def dispatch(argv, system, environ, run_dir):
    name, argv = move_name(argv)
    if name is not None:
        environ["ARSHIM_CLUSTER_NAME"] = name
        environ.pop("ARSHIM_CLUSTER_STATE", None)
    names = plan.Names.from_environment(environ, run_dir)
    # for the rig's own children (the reaper, the fake ssh); never the ranks (launch.launch_env)
    environ["ARSHIM_CLUSTER_NAME"], environ["ARSHIM_CLUSTER_STATE"] = names.prefix, names.state
    rig = Jobs(names, system, environ, TOOLS_DIR)
    command, args = (argv[0], argv[1:]) if argv else ("", [])
    if command in ("", "-h", "--help", "help"):
        sys.stdout.write(USAGE)
        return 0
    if command == "check":
        return rig.check_prereqs()
    if command != "up" and system.uid() != 0:  # up checks its options, then every prerequisite (cmd_up)
        print("arshim-cluster: SKIP: the emulated cluster needs root (network namespaces); running as "
              f"{system.user()}", file=sys.stderr)
        return 77
    if command not in COMMAND_FUNCTIONS:
        raise Failure(f"unknown command '{command}' ({COMMANDS})", 2)
    return COMMAND_FUNCTIONS[command](rig, args)


def exit_on(status):
    def handler(signum, frame):
        raise SystemExit(status)
    return handler


def main(argv=None, system=None, environ=None, run_dir=plan.RUN_DIR):
    """The exit status of one `arshim cluster` command; a failure is one line on stderr, never a traceback."""
    try:
        return dispatch(list(sys.argv[1:] if argv is None else argv), system or System(),
                        os.environ if environ is None else environ, run_dir)
    except Failure as e:
        print(e.line(), file=sys.stderr)
        return e.status
    except OSError as e:  # a state file or log the rig cannot write (e.g. a symlink planted at its name)
        print(f"arshim-cluster: error: {one_line(e.filename or '')}: {e.strerror}", file=sys.stderr)
        return 1


def entry():
    """tools/cluster/arshim-cluster: INT and TERM end the command with 130 and 143 after its cleanup (a rig that
    `run` brought up is taken down again)."""
    signal.signal(signal.SIGINT, exit_on(130))
    signal.signal(signal.SIGTERM, exit_on(143))
    sys.exit(main())


if __name__ == "__main__":
    entry()
