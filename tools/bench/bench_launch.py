"""Launching a benchmark program under mpirun from the benchmark drivers in this directory: the per-rank
environment in each launcher's syntax, and one run with the caller's own ARSHIM_* variables kept out (only what
the configuration sets reaches the ranks)."""
import os
import subprocess


def env_args(flavor, env):
    """VAR=VALUE pairs for every rank: -x under Open MPI, -genv under MPICH."""
    out = []
    for k, v in env.items():
        out += ["-x", f"{k}={v}"] if flavor == "openmpi" else ["-genv", k, v]
    return out


def run(cmd, timeout):
    """Runs `cmd` (root allowed under Open MPI, no inherited ARSHIM_*); its stdout, or RuntimeError with its output."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env = {k: v for k, v in env.items() if not k.startswith("ARSHIM_")}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {proc.returncode}\n{proc.stdout}{proc.stderr}")
    return proc.stdout
