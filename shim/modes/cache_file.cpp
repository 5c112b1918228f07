#include "shim/modes/cache_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>

#include "policy/rule_writer.h"
#include "policy/text.h"
#include "shim/stats/log_file.h"

namespace arshim::tune::cache {

namespace {

constexpr const char* kMadeBy = "arshim online tuning";

std::string quoted_path(const std::string& path) { return "ARSHIM_TUNE_CACHE=" + printable(path, 200); }

// The first bytes of a regular file (a file too large to read whole may still be a cache: its first line says).
bool peek(const std::string& path, std::string* head) {
    const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st {};
    char buffer[64];
    ssize_t n = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) n = read(fd, buffer, sizeof buffer);
    close(fd);
    if (n < 0) return false;
    head->assign(buffer, static_cast<std::size_t>(n));
    return true;
}

bool signed_as_cache(const std::string& text) { return text.rfind(kSignature, 0) == 0; }

std::string origin_value(const policy::Table& table, const char* key) {
    for (const auto& [k, v] : table.origin)
        if (k == key) return v;
    return "";
}

std::string tag_part(const std::string& s) {
    std::string out;
    for (const char c : s) {
        const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                           c == '-' || c == '_';
        if (plain) out += c;
        else if (!out.empty() && out.back() != '_') out += '_';
    }
    while (!out.empty() && out.back() == '_') out.pop_back();
    return out.empty() ? "unknown" : out.substr(0, 60);
}

bool same_match(const policy::Box& a, const policy::Box& b) {
    for (int d = 0; d < policy::Box::kIntervals; ++d)
        if (!(a.dim[d] == b.dim[d])) return false;
    return a.dtypes == b.dtypes && a.ops == b.ops && a.mpis == b.mpis && a.bugs == b.bugs && a.repros == b.repros;
}

// Time a rule saves per call against the library's allreduce (0 when unknown): what keeping it is worth.
double saving_us(const policy::RuleSpec& rule) {
    const policy::Evidence& e = rule.evidence;
    return e.native_us >= 0 && e.time_us >= 0 ? e.native_us - e.time_us : 0.0;
}

// `rules` without the `n` least useful (their relative order kept).
std::vector<policy::RuleSpec> without_least_useful(std::vector<policy::RuleSpec> rules, std::size_t n) {
    std::vector<std::size_t> order(rules.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&rules](std::size_t a, std::size_t b) { return saving_us(rules[a]) < saving_us(rules[b]); });
    std::vector<bool> drop(rules.size(), false);
    for (std::size_t i = 0; i < n && i < order.size(); ++i) drop[order[i]] = true;
    std::vector<policy::RuleSpec> kept;
    for (std::size_t i = 0; i < rules.size(); ++i)
        if (!drop[i]) kept.push_back(std::move(rules[i]));
    return kept;
}

// An exclusive lock on "<path>.lock", held until destruction. The lock file is opened like every file ARShim touches
// in a shared directory: never through a symbolic link, only a regular file, never blocking on a FIFO.
class LockFile {
public:
    LockFile(const std::string& path, int timeout_ms) {
        const std::string name = path + ".lock";
        fd_ = open(name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
        if (fd_ < 0) {
            problem_ = printable(name, 200) + ": cannot open the lock file (" + std::strerror(errno) + ")";
            return;
        }
        struct stat st {};
        if (fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
            problem_ = printable(name, 200) + ": the lock file is " + special_file_kind(st.st_mode) + " (left alone)";
            close(fd_);
            fd_ = -1;
            return;
        }
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
        for (;;) {
            if (flock(fd_, LOCK_EX | LOCK_NB) == 0) {
                locked_ = true;
                return;
            }
            if (errno == ENOLCK || errno == EOPNOTSUPP || errno == ENOSYS) {
                unsupported_ = printable(name, 200) + ": the file system has no locks (" + std::strerror(errno) +
                               "): written without one; jobs finishing at the same moment may lose each other's "
                               "new rules";
                return;
            }
            if (errno != EWOULDBLOCK && errno != EINTR) {
                problem_ = printable(name, 200) + ": cannot lock (" + std::strerror(errno) + ")";
                return;
            }
            if (std::chrono::steady_clock::now() >= deadline) {
                problem_ = printable(name, 200) + ": still locked by another job after " +
                           std::to_string(timeout_ms / 1000) + " s";
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }
    ~LockFile() {
        if (fd_ >= 0) close(fd_);  // closing releases the lock
    }
    LockFile(const LockFile&) = delete;
    LockFile& operator=(const LockFile&) = delete;
    bool usable() const { return locked_ || !unsupported_.empty(); }
    const std::string& problem() const { return problem_; }
    const std::string& unsupported() const { return unsupported_; }

private:
    int fd_ = -1;
    bool locked_ = false;
    std::string problem_, unsupported_;
};

}  // namespace

std::string Origin::describe() const { return library + ", ARShim " + arshim; }

Inspection inspect(const std::string& path, const Origin& mine, uint64_t max_bytes) {
    Inspection out;
    struct stat st {};
    if (stat(path.c_str(), &st) != 0 && errno == ENOENT) return out;  // nothing there (or a dangling link)
    std::string text, why;
    if (!read_regular_file(path, max_bytes, &text, &why)) {
        std::string head;
        if (S_ISREG(st.st_mode) && peek(path, &head) && signed_as_cache(head)) {
            out.holds = Holds::other_cache;
            out.why = "an ARShim tuning cache this run cannot read (" + why + ")";
        } else {
            out.holds = Holds::not_a_cache;
            out.why = why;
        }
        return out;
    }
    if (!signed_as_cache(text)) {
        out.holds = Holds::not_a_cache;
        out.why = "is not an ARShim tuning cache (its first line is not \"" + std::string(kSignature) + "\")";
        return out;
    }
    policy::Table table = policy::read_table(text, "ARSHIM_TUNE_CACHE", false);
    if (!table.usable()) {
        out.holds = Holds::other_cache;
        out.why = "an ARShim tuning cache this version cannot read (" +
                  (table.problems.empty() ? std::string("?") : table.problems.front()) + ")";
        return out;
    }
    const std::string flavor = origin_value(table, "flavor"), library = origin_value(table, "library"),
                      version = origin_value(table, "arshim");
    if (origin_value(table, "made_by") != kMadeBy || flavor != mine.flavor || library != mine.library ||
        version != mine.arshim) {
        out.holds = Holds::other_cache;
        out.why = "the cache of " + printable(library.empty() ? flavor : library, 100) + ", ARShim " +
                  printable(version, 40);
        return out;
    }
    out.holds = Holds::ours;
    out.table = std::move(table);
    out.text = std::move(text);
    return out;
}

std::string aside_path(const std::string& path, const Origin& mine) {
    return path + "." + tag_part(mine.flavor) + "-" + tag_part(mine.library) + "-arshim-" + tag_part(mine.arshim);
}

Location locate(const std::string& path, const Origin& mine, uint64_t max_bytes) {
    Location loc;
    loc.found = inspect(path, mine, max_bytes);
    switch (loc.found.holds) {
    case Holds::nothing:
    case Holds::ours: loc.target = path; return loc;
    case Holds::not_a_cache:
        loc.note = quoted_path(path) + ": " + loc.found.why + "; left untouched: no tuning cache is read or written";
        loc.warn = true;
        return loc;
    case Holds::other_cache: break;
    }
    const std::string aside = aside_path(path, mine);
    const std::string other = loc.found.why;
    loc.found = inspect(aside, mine, max_bytes);
    if (loc.found.holds == Holds::nothing || loc.found.holds == Holds::ours) {
        loc.target = aside;
        loc.note = quoted_path(path) + " holds " + other + "; kept as it is: the cache of " + mine.describe() +
                   " is " + printable(aside, 260);
        return loc;
    }
    loc.note = quoted_path(path) + " holds " + other + ", and " + printable(aside, 260) + " " +
               (loc.found.holds == Holds::other_cache ? "holds " : "") + loc.found.why +
               "; both left untouched: no tuning cache is read or written";
    loc.warn = true;
    loc.found = Inspection{};
    return loc;
}

std::vector<policy::RuleSpec> merged(const std::vector<policy::RuleSpec>& kept,
                                     const std::vector<policy::RuleSpec>& learned) {
    std::vector<policy::RuleSpec> out;
    for (const policy::RuleSpec& rule : kept) {
        const bool replaced = std::any_of(learned.begin(), learned.end(), [&rule](const policy::RuleSpec& l) {
            return same_match(l.match, rule.match);
        });
        if (!replaced) out.push_back(rule);
    }
    out.insert(out.end(), learned.begin(), learned.end());
    return out;
}

std::string render(const std::vector<policy::RuleSpec>& rules, const Origin& mine, const std::string& date) {
    policy::TableHeader header;
    header.origin = {{"made_by", kMadeBy}, {"flavor", mine.flavor}, {"library", mine.library},
                     {"arshim", mine.arshim}, {"date", date}};
    const std::string preamble =
        std::string(kSignature) +
        " (ARSHIM_TUNE_CACHE, docs/tuning.md): what online tuning measured in jobs on this machine,\n"
        "# as policy rules tried before every other rule. Rewritten by rank 0 at MPI_Finalize under a lock, merged with\n"
        "# what other jobs wrote; ARShim reads and writes only a cache of its own origin ([origin] below).\n";
    return render_table(rules, header, preamble);
}

std::vector<policy::RuleSpec> within_limits(std::vector<policy::RuleSpec> rules, const Origin& mine,
                                            const std::string& date, const Limits& limits, std::size_t* dropped) {
    const std::size_t before = rules.size();
    if (rules.size() > limits.max_rules) {
        const std::size_t excess = rules.size() - limits.max_rules;
        rules = without_least_useful(std::move(rules), excess);
    }
    // Each round drops a tenth (at least one): a full cache is cut in a few renders, not one per rule.
    while (!rules.empty() && render(rules, mine, date).size() > limits.max_bytes) {
        const std::size_t tenth = std::max<std::size_t>(1, rules.size() / 10);
        rules = without_least_useful(std::move(rules), tenth);
    }
    *dropped = before - rules.size();
    return rules;
}

Outcome update(const std::string& path, const Origin& mine, const std::vector<policy::RuleSpec>& learned,
               const Limits& limits, bool follow_symlinks, const std::string& date, int lock_timeout_ms) {
    Outcome out;
    if (learned.empty()) return out;
    // A path that holds something else gets no lock file beside it either.
    if (const Location before = locate(path, mine, limits.max_bytes); before.target.empty()) {
        out.problem = before.note;
        return out;
    }
    const LockFile lock(path, lock_timeout_ms);
    if (!lock.usable()) {
        out.problem = quoted_path(path) + ": not written: " + lock.problem();
        return out;
    }
    if (!lock.unsupported().empty()) out.notes.push_back(quoted_path(path) + ": " + lock.unsupported());
    // Read again under the lock: another job may have written since this one started.
    const Location loc = locate(path, mine, limits.max_bytes);
    if (loc.target.empty()) {
        out.problem = loc.note;
        return out;
    }
    if (!loc.note.empty()) out.notes.push_back(loc.note);
    const std::vector<policy::RuleSpec> rules =
        within_limits(merged(loc.found.table.rules, learned), mine, date, limits, &out.dropped);
    if (out.dropped > 0)
        out.notes.push_back(quoted_path(path) + ": " + std::to_string(out.dropped) +
                            " least useful rules dropped (the smallest time saved against the library) to stay within " +
                            std::to_string(limits.max_rules) + " rules and " + std::to_string(limits.max_bytes) +
                            " bytes (ARSHIM_POLICY_MAX_BYTES)");
    const stats::WriteOutcome written = stats::write_log_file(loc.target, render(rules, mine, date), follow_symlinks);
    if (!written.ok()) {
        out.problem = "ARSHIM_TUNE_CACHE=" + printable(loc.target, 260) + ": not written: " + written.describe();
        return out;
    }
    out.written = true;
    out.target = loc.target;
    out.rules = rules.size();
    return out;
}

}  // namespace arshim::tune::cache
