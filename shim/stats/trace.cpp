#include "shim/stats/trace.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "policy/text.h"

namespace arshim::trace {

namespace {

// The first line of every trace: how an earlier trace is told from any other file at the path.
constexpr const char* kSignature = "{\"trace\": \"arshim-trace/1\"";

std::mutex g_mutex;
int g_fd = -1;
int g_rank = -1;

bool starts_as_trace(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return false;
    struct stat st {};
    char head[64] = {};
    ssize_t n = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) n = read(fd, head, sizeof head);
    close(fd);
    const std::size_t want = std::strlen(kSignature);
    return n >= static_cast<ssize_t>(want) && std::memcmp(head, kSignature, want) == 0;
}

void write_line(const std::string& line) {
    std::size_t done = 0;
    while (done < line.size()) {
        const ssize_t n = write(g_fd, line.data() + done, line.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;  // a full disk loses the rest of the trace, never the job
        done += static_cast<std::size_t>(n);
    }
}

}  // namespace

std::string start(const std::string& pattern, int world_rank, bool follow_symlinks) {
    if (pattern.empty()) return "";
    const std::size_t at = pattern.find("%r");
    if (at == std::string::npos && world_rank != 0) return "";  // one file: rank 0's
    std::string path = pattern;
    if (at != std::string::npos) path.replace(at, 2, std::to_string(world_rank));
    const int nofollow = follow_symlinks ? 0 : O_NOFOLLOW;
    const int flags = O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOCTTY | nofollow;
    int fd = open(path.c_str(), flags, 0644);
    if (fd < 0 && errno == EEXIST) {
        // An earlier run's trace is replaced; anything else is left as it is.
        if (!starts_as_trace(path))
            return "ARSHIM_TRACE=" + printable(path, 200) +
                   ": exists and is not an ARShim trace (its first line says otherwise); left untouched, no trace";
        if (unlink(path.c_str()) == 0) fd = open(path.c_str(), flags, 0644);
    }
    if (fd < 0) return "ARSHIM_TRACE=" + printable(path, 200) + ": cannot create (" + std::strerror(errno) + "); no trace";
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        g_fd = fd;
        g_rank = world_rank;
        write_line(std::string(kSignature) + ", \"rank\": " + std::to_string(world_rank) + "}\n");
    }
    g_on.store(true, std::memory_order_relaxed);
    return "";
}

void event(const char* name, const json& fields) {
    if (!on()) return;
    json line;
    line["event"] = name;
    line["rank"] = g_rank;
    for (const auto& [key, value] : fields.items()) line[key] = value;
    // Strings from the user's environment and files may hold anything: dump() escapes control characters, and
    // invalid UTF-8 is replaced rather than thrown on.
    const std::string text = line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_fd >= 0) write_line(text);
}

void stop() {
    g_on.store(false, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_fd >= 0) close(g_fd);
    g_fd = -1;
}

json decision(const policy::Decision& d) {
    json params = json::object();
    policy::for_each_key(d, [&](const policy::KeyView& k) {
        if (!k.shown) return;
        if (k.kind == policy::KeyKind::choice) params[k.name] = k.words->words[k.value];
        else params[k.name] = k.value;
    });
    json out{{"path", policy::path_name(d.path())}, {"params", params}, {"text", policy::describe_decision(d)}};
    if (policy::traits_of(d.path()).hands_ops_to_library) out["kernel"] = policy::kernel_choice_name(d.kernel);
    return out;
}

json tuning(const stats::TuningRecord& l) {
    json candidates = json::array();
    for (const stats::TunedCandidate& c : l.candidates) {
        json row{{"decision", decision(c.decision)}, {"stage", c.stage}, {"declined", c.declined}};
        if (!c.declined) row["median_us"] = c.median_us, row["spread_us"] = c.spread_us;
        candidates.push_back(row);
    }
    return json{{"communicator_size", l.comm_size}, {"nodes", l.nodes}, {"ppn", l.ppn},
                {"bytes_min", vocab::bucket_floor(l.bucket)}, {"bytes_max", vocab::bucket_ceiling(l.bucket)},
                {"datatype", vocab::dtype_class_name(l.dclass)}, {"op", vocab::op_name(l.op)},
                {"policy", policy::describe_decision(l.policy_choice)}, {"chosen", policy::describe_decision(l.chosen)},
                {"policy_decision", decision(l.policy_choice)}, {"chosen_decision", decision(l.chosen)},
                {"chosen_us", l.chosen_us}, {"policy_us", l.policy_us}, {"native_us", l.native_us},
                {"candidates", candidates}};
}

json startup_check(const stats::StartupCheck& c) {
    json out{{"checked", c.checked}};
    if (!c.checked) return out;
    out["all_loaded"] = c.all_loaded;
    out["timeout_s"] = c.timeout_s;
    if (c.knows_ranks) {
        out["ranks_without_arshim"] = c.without_arshim;
        out["ranks_without_arshim_count"] = c.without_arshim_count;
        out["ranks_other_build"] = c.other_build;
        out["ranks_other_build_count"] = c.other_build_count;
    } else {
        out["parent"] = c.parent;
        out["parent_answered"] = c.parent_answered;
    }
    return out;
}

}  // namespace arshim::trace
