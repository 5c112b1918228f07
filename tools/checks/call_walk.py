# gdb script (tools/checks/call_walk.sh runs it): follows MPI_Allreduce calls with `step` through ARShim's own sources
# (the MPI library, the system and the standard library, fmt, spdlog, nlohmann and toml++ are stepped over) and
# prints one line "WALK {json}": per watched call, the steps, the "stays" (runs of consecutive steps in one source
# file), the files, the stays in engine.cpp, and the walk itself. The program must call MPI_Allreduce on the line
# given by CALL_WALK_LINE (file:line); CALL_WALK_CALLS lists the calls to follow (1-based), CALL_WALK_TOTAL how many
# the program makes.
import json
import os

import gdb

WATCH = {int(x) for x in os.environ.get("CALL_WALK_CALLS", "1,12").split(",")}
TOTAL = int(os.environ.get("CALL_WALK_TOTAL", "12"))
gdb.execute("set pagination off")
gdb.execute("set confirm off")
for depth in range(1, 8):  # a glob's * stops at a slash
    gdb.execute("skip -gfi /usr" + "/*" * depth, to_string=True)
for space in ("std::", "__gnu_cxx::", "fmt::", "spdlog::", "nlohmann::", "toml::"):
    gdb.execute(f"skip -rfu ^{space}", to_string=True)
gdb.execute("break " + os.environ["CALL_WALK_LINE"], to_string=True)
gdb.execute("run", to_string=True)
caller = gdb.selected_frame().name()
walks = {}
for call in range(1, TOTAL + 1):
    if call in WATCH:
        files = []
        gdb.execute("step", to_string=True)
        while gdb.selected_frame().name() != caller:
            sal = gdb.selected_frame().find_sal()
            files.append(sal.symtab.filename.replace("../", "") if sal.symtab else "?")
            gdb.execute("step", to_string=True)
        stays = [f for i, f in enumerate(files) if i == 0 or files[i - 1] != f]
        walks[call] = {"steps": len(files), "stays": len(stays), "files": len(set(stays)),
                       "engine_stays": sum(1 for s in stays if s.endswith("core/engine.cpp")), "walk": stays}
    gdb.execute("continue", to_string=True)
print("WALK " + json.dumps(walks), flush=True)
