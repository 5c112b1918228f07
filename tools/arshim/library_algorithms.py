"""Which allreduce algorithm MPICH 4.0.2 and Open MPI 4.1 run for a call, and the SimGrid 3.32 SMPI algorithm that
stands for it (`--cfg=smpi/allreduce:<name>`), so that `arshim simulate`'s native configurations run the libraries'
real choices (docs/scale.md "Which algorithm each native row ran").

MPICH 4.0.2 (ch4, default CVARs: MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=auto, MPIR_CVAR_DEVICE_COLLECTIVES=percoll,
MPIR_CVAR_ENABLE_SMP_COLLECTIVES=1) chooses with its compiled-in csel tables, maint/tuning/coll/ch4/generic.json and
maint/tuning/coll/mpir/generic.json (checked against the JSON strings inside Debian 12's libmpich.so.12.2.2,
4.0.2-3+b1):
- ch4: a communicator within one node (comm_size = node_comm_size) takes composition gamma, the POSIX shared-memory
  allreduce (release_gather: a tree reduce and a broadcast through shared cells); one spanning nodes whose hierarchy
  is "parent" (some node holds two or more of its ranks: MPIR_Comm_commit builds node_comm and node_roots_comm then)
  with a commutative op takes composition alpha: node reduce, MPIR allreduce among the node roots, node broadcast;
  any other (one rank per node) composition beta, the MPIR allreduce on the whole communicator.
- mpir (the MPIR allreduce): recursive doubling for avg_msg_size <= 8 bytes (count x type size) or for a built-in op
  when count < pof2(comm size); reduce_scatter_allgather (Rabenseifner) otherwise.
SimGrid's stand-ins: rdb (recursive doubling with MPICH's fold of the extra ranks), rab_rdb (MPICH's
reduce_scatter_allgather: recursive halving, recursive doubling allgather, the same fold), smp_rdb (binomial reduce
in the host, recursive doubling among the host leaders, binomial broadcast) and smp_rsag_rab (the same with
recursive halving and doubling among the leaders; SimGrid refuses it unless the communicator's size is a power of
two, where smp_rsag, a ring reduce-scatter and allgather among the leaders, stands in: the same bytes, 2(h - 1)
latencies instead of 2 log2 h). The node phase is SMPI's binomial tree over the host's loopback, not MPICH's shared
cells. SimGrid's smp_* algorithms deadlock when the ranks per host are not a power of two (their binomial tree
inside a host reaches the next host's first rank: measured on 2 x 3 and 16 x 28); there mvapich2_two_level (an
allreduce in the host, recursive doubling among the leaders, a broadcast) stands for the recursive doubling case and
rab_rdb on the whole communicator (with block placement each host's link carries the bytes of Rabenseifner among
the roots; 2 log2 p latencies and no node phase) for the Rabenseifner case.

Open MPI 4.1 (coll/tuned's fixed decision, ompi_coll_tuned_allreduce_intra_dec_fixed, commutative ops): the table of
policy/cost_model.cpp kOmpiAllreduce, which SimGrid 3.32's ompi selector carries too (smpi_openmpi_selector.cpp,
"Updated 02/2022"), so the selector runs it, except where Open MPI falls back and SimGrid does not: ring and segmented
ring (4, 5) with count < comm size and Rabenseifner (6) with count < pof2 run recursive doubling in Open MPI
(coll_base_allreduce.c); there rdb is forced."""

ELEMENT_BYTES = 8  # the probe reduces doubles (tools/simulate/probe.c)

# Open MPI 4.1 coll/tuned fixed rules for commutative ops: (communicator size below, [(total bytes below, alg)]),
# 0 = any. The same table as policy/cost_model.cpp kOmpiAllreduce and SimGrid 3.32's allreduce__ompi.
OMPI_ALLREDUCE = (
    (4, ((8, 4), (4096, 3), (8192, 4), (16384, 3), (65536, 4), (262144, 5), (0, 6))),
    (8, ((16, 4), (8192, 3), (0, 6))),
    (16, ((8192, 3), (0, 6))),
    (32, ((64, 5), (4096, 3), (0, 6))),
    (64, ((128, 5), (0, 6))),
    (128, ((262144, 3), (0, 6))),
    (256, ((131072, 2), (262144, 3), (0, 6))),
    (512, ((4096, 2), (0, 6))),
    (2048, ((2048, 2), (16384, 3), (0, 6))),
    (4096, ((2048, 2), (4096, 5), (16384, 3), (0, 6))),
    (0, ((2048, 2), (16384, 5), (32768, 3), (0, 6))),
)
OMPI_NAMES = {2: "nonoverlapping (reduce + bcast)", 3: "recursive doubling", 4: "ring", 5: "segmented ring",
              6: "Rabenseifner"}
# SimGrid's ompi selector's algorithm for each (allreduce__ompi's funcs[]).
OMPI_SMPI = {2: "redbcast", 3: "rdb", 4: "lr", 5: "ompi_ring_segmented", 6: "rab_rdb"}


def floor_pof2(n):
    return 1 << (max(1, n).bit_length() - 1)


def mpich_mpir(ranks, nbytes, element=ELEMENT_BYTES):
    """MPICH 4.0.2's MPIR allreduce on `ranks` ranks (mpir/generic.json): 'recursive_doubling' or
    'reduce_scatter_allgather'."""
    count = nbytes // element
    if nbytes <= 8 or count < floor_pof2(ranks):
        return "recursive_doubling"
    return "reduce_scatter_allgather"


def mpich_402(nodes, ppn, nbytes, element=ELEMENT_BYTES):
    """(SMPI algorithm, what MPICH 4.0.2 runs) for an MPI_SUM allreduce of `nbytes` on `nodes` x `ppn` ranks placed
    in blocks."""
    ranks = nodes * ppn
    if nodes == 1:
        return "smp_rdb", "ch4 gamma: POSIX release_gather (node tree reduce + bcast)"
    if ppn == 1:
        mpir = mpich_mpir(ranks, nbytes, element)
        return ("rdb" if mpir == "recursive_doubling" else "rab_rdb"), f"ch4 beta: MPIR {mpir}"
    mpir = mpich_mpir(nodes, nbytes, element)
    what = f"ch4 alpha: node reduce, MPIR {mpir} among the {nodes} node roots, node bcast"
    if ppn & (ppn - 1):
        # SimGrid's smp_* algorithms deadlock here: their binomial tree inside a host reaches past its last rank.
        if mpir == "recursive_doubling":
            return "mvapich2_two_level", what + " (SMPI: node allreduce, not reduce; smp_rdb needs a power-of-two ppn)"
        return "rab_rdb", what + " (SMPI: Rabenseifner on the whole communicator; smp_* need a power-of-two ppn)"
    if mpir == "recursive_doubling":
        return "smp_rdb", what
    if ranks & (ranks - 1) == 0:
        return "smp_rsag_rab", what
    return "smp_rsag", what + " (SMPI: ring among the leaders, smp_rsag_rab needs a power-of-two communicator)"


def ompi_41_rule(ranks, nbytes):
    """Open MPI 4.1's fixed-rule algorithm number for a commutative allreduce of `nbytes` on `ranks` ranks."""
    for below_size, steps in OMPI_ALLREDUCE:
        if below_size and ranks >= below_size:
            continue
        for below_bytes, alg in steps:
            if below_bytes == 0 or nbytes < below_bytes:
                return alg
    return 6


def ompi_41(ranks, nbytes, element=ELEMENT_BYTES):
    """(SMPI algorithm to force or None for SimGrid's ompi selector, what Open MPI 4.1 runs)."""
    alg = ompi_41_rule(ranks, nbytes)
    count = nbytes // element
    if alg in (4, 5) and count < ranks:
        return "rdb", f"{OMPI_NAMES[alg]} -> recursive doubling (count < comm size)"
    if alg == 6 and count < floor_pof2(ranks):
        return "rdb", "Rabenseifner -> recursive doubling (count < pof2)"
    return None, f"{OMPI_NAMES[alg]} (selector: {OMPI_SMPI[alg]})"


def native_algorithm(selector, nodes, ppn, nbytes):
    """(the SMPI allreduce algorithm to force, or None for the selector's own, a description) of the native
    configuration `native-<selector>` at one point."""
    if selector == "mpich":
        algorithm, what = mpich_402(nodes, ppn, nbytes)
        return algorithm, f"MPICH 4.0.2 {what}"
    algorithm, what = ompi_41(nodes * ppn, nbytes)
    return algorithm, f"Open MPI 4.1 {what}"
