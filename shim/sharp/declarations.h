/* ARShim's own declarations of the part of NVIDIA's SHARP collective library API (libsharp_coll.so) that ARShim
 * uses. Used when the build has no vendor header (meson option sharp_include empty); shim/sharp/lib.h picks one or
 * the other. Plain C, so that the test double (test/sharp/fake_sharp_coll.cpp) implements exactly these.
 *
 * API VERSION FOLLOWED: the SHARP collective library API of the SHARP 3.x releases (as shipped in HPC-X). Written
 * from the public API reference and from how public users call it (UCC's tl/sharp, NCCL's SHARP plugin): names,
 * enumerator values and member order are facts of the ABI and must match the library; nothing else is taken over.
 * Libraries before SHARP 3 lack the bfloat16 and 8-bit datatypes (NCCL's plugin tests for them at build time), so
 * SHARP_DTYPE_NULL has another value there: ARShim offloads a type only when the capability query reports its bit,
 * and passes SHARP_DTYPE_NULL only as the tag type of reductions without a location, which the library does not
 * read (public callers leave it unset).
 *
 * Only what ARShim calls is declared: context init/finalize with out-of-band callbacks, capability query, group
 * (communicator) init/destroy, memory registration, blocking and non-blocking allreduce, request test/wait/free,
 * strerror. Reserved members keep the layout; ARShim zero-initializes every structure it passes. */
#ifndef ARSHIM_SHARP_DECLARATIONS_H
#define ARSHIM_SHARP_DECLARATIONS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types of a reduction, in the library's numbering. */
enum sharp_datatype {
    SHARP_DTYPE_UNSIGNED = 0,       /* uint32 */
    SHARP_DTYPE_INT = 1,            /* int32 */
    SHARP_DTYPE_UNSIGNED_LONG = 2,  /* uint64 */
    SHARP_DTYPE_LONG = 3,           /* int64 */
    SHARP_DTYPE_FLOAT = 4,          /* binary32 */
    SHARP_DTYPE_DOUBLE = 5,         /* binary64 */
    SHARP_DTYPE_UNSIGNED_SHORT = 6, /* uint16 */
    SHARP_DTYPE_SHORT = 7,          /* int16 */
    SHARP_DTYPE_FLOAT_SHORT = 8,    /* binary16 */
    SHARP_DTYPE_BFLOAT16 = 9,
    SHARP_DTYPE_UINT8 = 10,
    SHARP_DTYPE_INT8 = 11,
    SHARP_DTYPE_NULL = 12           /* "none": the tag type of reductions without a location */
};

/* Reduction operators, in the library's numbering (support per group: sharp_coll_caps.support_mask.reduce_ops). */
enum sharp_reduce_op {
    SHARP_OP_MAX = 0,
    SHARP_OP_MIN = 1,
    SHARP_OP_SUM = 2,
    SHARP_OP_PROD = 3,
    SHARP_OP_LAND = 4,
    SHARP_OP_BAND = 5,
    SHARP_OP_LOR = 6,
    SHARP_OP_BOR = 7,
    SHARP_OP_LXOR = 8,
    SHARP_OP_BXOR = 9,
    SHARP_OP_MAXLOC = 10,
    SHARP_OP_MINLOC = 11,
    SHARP_OP_NULL = 12
};

/* Return codes (0 = success, negative = error); sharp_coll_strerror() names them. */
enum sharp_error_no {
    SHARP_COLL_SUCCESS = 0,
    SHARP_COLL_ERROR = -1,
    SHARP_COLL_ENOT_SUPP = -2,
    SHARP_COLL_ENOMEM = -3,
    SHARP_COLL_EGROUP_ALLOC = -4,
    SHARP_COLL_ECONN_TREE = -5,
    SHARP_COLL_EGROUP_JOIN = -6,
    SHARP_COLL_EQUOTA = -7,
    SHARP_COLL_ESESS_INIT = -8,
    SHARP_COLL_EDEV = -9,
    SHARP_COLL_EINVAL = -10,
    SHARP_COLL_EJOB_CREATE = -11,
    SHARP_COLL_ETREE_INFO = -12,
    SHARP_COLL_ENOTREE = -13,
    SHARP_COLL_EGROUP_ID = -14,
    SHARP_COLL_EOOB = -15,
    SHARP_COLL_EGROUP_MCAST = -16,
    SHARP_COLL_EGROUP_TRIM = -17,
    SHARP_COLL_ELOCK_FAILED = -18,  /* streaming-aggregation tree lock not obtained; may be retried */
    SHARP_COLL_ELOCK_DENIED = -19,  /* streaming-aggregation lock not permitted for this job */
    SHARP_COLL_ENO_RESOURCE = -20
};

/* Bits of sharp_coll_caps.support_mask.feature_mask. */
enum sharp_job_features {
    SHARP_FEATURE_LLT = 1 << 0,                 /* low-latency (datagram) aggregation */
    SHARP_FEATURE_REPRODUCIBLE = 1 << 1,
    SHARP_FEATURE_SAT = 1 << 2,                 /* streaming aggregation */
    SHARP_FEATURE_SAT_EXCLUSIVE_LOCK = 1 << 3
};

/* sharp_coll_reduce_spec.aggr_mode */
enum sharp_aggregation_mode {
    SHARP_AGGREGATION_NONE = 0,      /* the library chooses */
    SHARP_AGGREGATION_DATAGRAM = 1,  /* LLT */
    SHARP_AGGREGATION_STREAMING = 2  /* SAT */
};

enum sharp_data_buffer_type { SHARP_DATA_BUFFER = 0, SHARP_DATA_IOV = 1 };
enum sharp_data_memory_type { SHARP_MEM_TYPE_HOST = 0, SHARP_MEM_TYPE_CUDA = 1, SHARP_MEM_TYPE_LAST = 2 };

struct sharp_coll_context;  /* opaque: one per sharp_coll_init */
struct sharp_coll_comm;     /* opaque: one SHARP group */

/* Library configuration; start from the library's exported sharp_coll_default_config. */
struct sharp_coll_config {
    const char* ib_dev_list;
    int user_progress_num_polls;
    int coll_timeout;  /* milliseconds, -1 = none */
    uint32_t flags;
    int reserved_words[3];
};

/* Out-of-band collectives the caller provides (over its own transport: ARShim uses PMPI_* on the leaders'
 * communicator). `context` is the oob_ctx of the init or group spec; they return 0 on success. */
struct sharp_coll_out_of_band_colls {
    int (*bcast)(void* context, void* buffer, int len, int root);
    int (*barrier)(void* context);
    int (*gather)(void* context, int root, void* sbuf, void* rbuf, int len);
};

/* Group (SHARP communicator) creation: this member's rank and the members' ranks in the init "world". */
struct sharp_coll_comm_init_spec {
    int rank;
    int size;
    void* oob_ctx;
    const uint32_t* group_world_ranks;
    int reserved_words[2];
};

/* Context creation (collective over the "world" of processes that call it together). */
struct sharp_coll_init_spec {
    uint64_t job_id;            /* identical on every process of the world */
    int world_rank;
    int world_size;
    int (*progress_func)(void); /* may be NULL */
    int group_channel_idx;
    struct sharp_coll_config config;
    struct sharp_coll_out_of_band_colls oob_colls;
    int world_local_rank;       /* rank among this world's processes on the same host */
    int enable_thread_support;
    void* oob_ctx;
    int reserved_words[4];
};

/* What a context supports: bit (1 << value) of the enums above, and its resources. */
struct sharp_coll_caps {
    int sharp_pkt_version;
    uint64_t reserved_words[2];
    struct {
        uint64_t dtypes;       /* bit per enum sharp_datatype */
        uint64_t tag_dtypes;   /* bit per enum sharp_datatype usable as MINLOC/MAXLOC tag */
        uint64_t reduce_ops;   /* bit per enum sharp_reduce_op */
        uint64_t feature_mask; /* enum sharp_job_features */
        uint64_t reserved_words[4];
    } support_mask;
    struct {
        int max_osts;
        int user_data_per_ost; /* LLT payload of one transaction (outstanding transaction, "OST"), bytes */
        int max_groups;
        int max_group_channels;
        int osts_per_group;    /* transactions one group may have in flight */
    } resources;
};

/* A data buffer of a collective. Only contiguous host buffers are used (the library's IOV form is not declared;
 * it is smaller than the buffer form, so the union keeps its size). */
struct sharp_coll_data_desc {
    enum sharp_data_buffer_type type;
    enum sharp_data_memory_type mem_type;
    int reserved_words[2];
    union {
        struct {
            void* ptr;
            size_t length;     /* bytes */
            void* mem_handle;  /* from sharp_coll_reg_mr, or NULL */
        } buffer;
    };
};

/* One reduction. `length` counts elements of `dtype`. */
struct sharp_coll_reduce_spec {
    int root;  /* ignored by allreduce */
    struct sharp_coll_data_desc sbuf_desc;
    struct sharp_coll_data_desc rbuf_desc;
    enum sharp_datatype dtype;
    size_t length;
    enum sharp_reduce_op op;
    enum sharp_datatype tag_dtype;  /* MINLOC/MAXLOC only */
    enum sharp_aggregation_mode aggr_mode;
    int stream_lock_batch_size;
    size_t offset;
    int reserved_words[2];
};

/* The library's default configuration (a data symbol). */
extern const struct sharp_coll_config sharp_coll_default_config;

int sharp_coll_init(struct sharp_coll_init_spec* sharp_coll_spec, struct sharp_coll_context** sharp_coll_context);
int sharp_coll_finalize(struct sharp_coll_context* context);
int sharp_coll_caps_query(struct sharp_coll_context* context, struct sharp_coll_caps* sharp_caps);
int sharp_coll_comm_init(struct sharp_coll_context* context, struct sharp_coll_comm_init_spec* spec,
                         struct sharp_coll_comm** sharp_coll_comm);
int sharp_coll_comm_destroy(struct sharp_coll_comm* comm);
int sharp_coll_reg_mr(struct sharp_coll_context* context, void* buf, size_t size, void** mr);
int sharp_coll_dereg_mr(struct sharp_coll_context* context, void* mr);
int sharp_coll_do_allreduce(struct sharp_coll_comm* comm, struct sharp_coll_reduce_spec* spec);
int sharp_coll_do_allreduce_nb(struct sharp_coll_comm* comm, struct sharp_coll_reduce_spec* spec, void** handle);
int sharp_coll_req_test(void* handle);  /* non-zero when complete */
int sharp_coll_req_wait(void* handle);  /* completes and releases the request; returns its status */
int sharp_coll_req_free(void* handle);
const char* sharp_coll_strerror(int error);

#ifdef __cplusplus
}
#endif

#endif /* ARSHIM_SHARP_DECLARATIONS_H */
