// The statistics log never replaces or writes through anything but a regular file of its own making
// (shim/stats/log_file.h): devices, FIFOs, directories and planted symlinks are left alone, the temporary file is
// unpredictable and never left behind. No MPI needed.
#include "test/support/catch.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "shim/stats/log_file.h"

using arshim::stats::write_log_file;

namespace {

struct TempDir {
    std::string path;
    TempDir() {
        char pattern[] = "/tmp/arshim-logfile-XXXXXX";
        REQUIRE(mkdtemp(pattern) != nullptr);
        path = pattern;
    }
    ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
    std::string operator/(const std::string& name) const { return path + "/" + name; }
    std::set<std::string> entries() const {
        std::set<std::string> out;
        DIR* d = opendir(path.c_str());
        while (dirent* e = readdir(d))
            if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") out.insert(e->d_name);
        closedir(d);
        return out;
    }
};

std::string read_all(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

}  // namespace

TEST_CASE("A new log or an old regular file is written whole, mode 0644, nothing else left", "[log_file]") {
    TempDir dir;
    auto outcome = write_log_file(dir / "run.json", "{}\n", false);
    CHECK(outcome.ok());
    CHECK(read_all(dir / "run.json") == "{}\n");
    struct stat st {};
    REQUIRE(stat((dir / "run.json").c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0644);
    // An earlier log (its first key the schema), however indented, and an empty file are replaced.
    write(dir / "old.json", "{\n  \"schema\": \"arshim-stats/1\", \"scope\": \"job\"}\n");
    CHECK(write_log_file(dir / "old.json", "new", false, true).ok());
    CHECK(read_all(dir / "old.json") == "new");
    write(dir / "empty.json", "");
    CHECK(write_log_file(dir / "empty.json", "new", false, true).ok());
    CHECK(read_all(dir / "empty.json") == "new");
    CHECK(dir.entries() == std::set<std::string>{"empty.json", "old.json", "run.json"});
}

TEST_CASE("A file that is not an ARShim log is left alone (issue 56 item 7)", "[log_file]") {
    TempDir dir;
    for (const std::string& text : {std::string("precious data\n"), std::string("{\"schema\": \"other/1\"}\n"),
                                     std::string("new")}) {
        write(dir / "data.json", text);
        const auto outcome = write_log_file(dir / "data.json", "{}\n", false, true);
        CHECK_FALSE(outcome.ok());
        CHECK(outcome.refused.find("not an ARShim statistics log") != std::string::npos);
        CHECK(read_all(dir / "data.json") == text);
    }
    CHECK(dir.entries() == std::set<std::string>{"data.json"});  // no temporary file left
    // The tuning cache recognises its own files itself (shim/modes/cache_file.h): without the log's rule a regular
    // file is replaced whole.
    CHECK(write_log_file(dir / "data.json", "{}\n", false, false).ok());
    CHECK(read_all(dir / "data.json") == "{}\n");
}

TEST_CASE("Special files at the log's path are left alone", "[log_file]") {
    TempDir dir;
    REQUIRE(mkfifo((dir / "fifo").c_str(), 0644) == 0);
    REQUIRE(mkdir((dir / "dir").c_str(), 0755) == 0);
    const bool root = geteuid() == 0;
    if (root) REQUIRE(mknod((dir / "null").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0);  // a copy of /dev/null
    for (const char* name : {"fifo", "dir", "null"}) {
        if (std::string(name) == "null" && !root) continue;
        INFO(name);
        const auto outcome = write_log_file(dir / name, "{}\n", false);
        CHECK_FALSE(outcome.ok());
        CHECK_FALSE(outcome.refused.empty());
        struct stat st {};
        REQUIRE(lstat((dir / name).c_str(), &st) == 0);
        CHECK_FALSE(S_ISREG(st.st_mode));  // still what it was
    }
    if (root) {
        struct stat st {};
        REQUIRE(lstat((dir / "null").c_str(), &st) == 0);
        CHECK(S_ISCHR(st.st_mode));
    }
    std::set<std::string> want{"fifo", "dir"};
    if (root) want.insert("null");
    CHECK(dir.entries() == want);  // no temporary file left
}

TEST_CASE("A symlink at the log's path is not followed unless asked", "[log_file]") {
    TempDir dir;
    write(dir / "victim", "precious");
    REQUIRE(symlink((dir / "victim").c_str(), (dir / "run.json").c_str()) == 0);
    auto outcome = write_log_file(dir / "run.json", "{}\n", false);
    CHECK_FALSE(outcome.ok());
    CHECK(outcome.refused.find("symbolic link") != std::string::npos);
    CHECK(read_all(dir / "victim") == "precious");
    struct stat st {};
    REQUIRE(lstat((dir / "run.json").c_str(), &st) == 0);
    CHECK(S_ISLNK(st.st_mode));

    // Asked to follow: a target that is not an ARShim log is still left alone; an earlier log there gets the new one,
    // the link stays a link.
    CHECK_FALSE(write_log_file(dir / "run.json", "{}\n", true, true).ok());
    CHECK(read_all(dir / "victim") == "precious");
    write(dir / "victim", "{\"schema\": \"arshim-stats/1\"}");
    outcome = write_log_file(dir / "run.json", "{}\n", true, true);
    CHECK(outcome.ok());
    CHECK(read_all(dir / "victim") == "{}\n");
    REQUIRE(lstat((dir / "run.json").c_str(), &st) == 0);
    CHECK(S_ISLNK(st.st_mode));

    // ... but never to something that is not a regular file.
    REQUIRE(mkfifo((dir / "fifo").c_str(), 0644) == 0);
    REQUIRE(symlink((dir / "fifo").c_str(), (dir / "to-fifo").c_str()) == 0);
    CHECK_FALSE(write_log_file(dir / "to-fifo", "{}\n", true).ok());
    CHECK(dir.entries() == std::set<std::string>{"fifo", "run.json", "to-fifo", "victim"});
}

TEST_CASE("A symlink planted at the old predictable temporary name is not written through", "[log_file]") {
    TempDir dir;
    write(dir / "victim", "precious");
    const std::string old_temp = dir / ("run.json.tmp." + std::to_string(getpid()));
    REQUIRE(symlink((dir / "victim").c_str(), old_temp.c_str()) == 0);
    CHECK(write_log_file(dir / "run.json", "{}\n", false).ok());
    CHECK(read_all(dir / "victim") == "precious");
    CHECK(read_all(dir / "run.json") == "{}\n");
}

TEST_CASE("An unwritable directory gives an error and leaves nothing", "[log_file]") {
    const auto outcome = write_log_file("/nonexistent-arshim-dir/run.json", "{}\n", false);
    CHECK_FALSE(outcome.ok());
    CHECK(outcome.error != 0);
    CHECK_FALSE(outcome.describe().empty());
}
