"""`arshim cluster` (tools/cluster/arshim-cluster): an emulated multi-host cluster on one machine, from network,
UTS, mount and IPC namespaces joined by shaped veth links (docs/cluster.md).

  plan     names, addresses, link rates and tbf settings, the state files' text, the commands that build the rig
  launch   mpirun command lines for both MPIs on the rig (hosts, fake ssh, transports, helpers), `wrap`'s rewriting
  verify   judging and printing what `verify` measured
  rig      the rig itself: up, down, shape, status, clean, exec, its state and lock
  jobs     what runs on it: mpirun, wrap, run, verify
  cli      the command line: options, messages, exit statuses
  system   the thin layer that runs ip, tc, nsenter and the launchers (faked by the unit tests)
"""


from ..text import one_line


class Failure(Exception):
    """Ends the command with one line on stderr and an exit status: `arshim-cluster: error: MESSAGE` (status 1 for a
    failure, 2 for bad usage), or the line as given (plain=True: SKIP lines, exit 77)."""

    def __init__(self, message, status=1, plain=False):
        super().__init__(message)
        self.status, self.plain = status, plain

    def line(self):
        return f"arshim-cluster: {'' if self.plain else 'error: '}{one_line(self)}"  # values quoted, escaped
