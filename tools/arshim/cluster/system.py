"""The only part of the rig that touches the machine: running `ip`, `tc`, `nsenter` and the launchers, starting
detached processes, signalling PIDs, the lock. Everything above it (plan, launch, verify, rig, jobs, cli) calls these
methods and nothing else that has side effects outside the rig's state directory, so the unit tests replace this
class with a fake that records the commands (test/tools/test_cluster*.py)."""
import fcntl
import os
import pwd
import shutil
import signal
import subprocess
import time

from ..files import open_output

# Where a started command's output goes, besides a file descriptor.
DEVNULL, PIPE = subprocess.DEVNULL, subprocess.PIPE


class System:
    def run(self, argv, env=None, quiet=False, stdout=None):
        """Runs a command in the foreground (inheriting stdin, stdout unless given a descriptor, and stderr unless
        quiet); its exit status."""
        return subprocess.call(argv, env=env, stdout=stdout, stderr=subprocess.DEVNULL if quiet else None)

    def capture(self, argv, env=None, merge_stderr=False, quiet=False):
        """(exit status, stdout text) of a command; merge_stderr: its stderr in the text too (2>&1)."""
        stderr = subprocess.STDOUT if merge_stderr else subprocess.DEVNULL if quiet else None
        p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True, errors="replace")
        return p.returncode, p.stdout

    def start(self, argv, env=None, stdout=None, quiet=False, detach=False):
        """Starts a command in the background: a handle with poll(), wait() and pid. stdout: a file descriptor, or
        subprocess.PIPE. detach: in a session of its own (setsid), with no terminal input, so that a signal to the
        caller's process group does not reach it."""
        return subprocess.Popen(argv, env=env, stdout=stdout, text=stdout == subprocess.PIPE,
                                stderr=subprocess.STDOUT if detach else subprocess.DEVNULL if quiet else None,
                                stdin=subprocess.DEVNULL if detach else None, start_new_session=detach)

    def which(self, name):
        return shutil.which(name)

    def uid(self):
        return os.getuid()

    def user(self):
        try:
            return pwd.getpwuid(os.getuid()).pw_name
        except KeyError:
            return str(os.getuid())

    def alive(self, pid):
        return os.path.isdir(f"/proc/{pid}")

    def signal(self, pids, sig=signal.SIGTERM):
        for pid in pids:
            try:
                os.kill(int(pid), sig)
            except (OSError, ValueError):
                pass

    def sleep(self, seconds):
        time.sleep(seconds)

    def lock(self, path, wait_seconds, on_wait):
        """flock on path (created if needed, never through a symlink, only a regular file), held until this process
        ends; the descriptor is not inherited by children (a killed owner never leaves the lock held by an orphan).
        False on timeout."""
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = open_output(path, append=True)  # a regular file only: never through a symlink, never a FIFO
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            pass
        on_wait()
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.1)

    def execv(self, argv):
        os.execv(argv[0], argv)
