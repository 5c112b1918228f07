/* A stand-in for a SHARP library that only leaves a mark when it is loaded: its constructor appends its process
 * id to the file named by MARK_ON_LOAD_FILE. The hardening test names it ARSHIM_SHARP_LIB and checks that
 * ARSHIM_SHARP=auto loads nothing when no policy rule or override can route a call to SHARP. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void leave_mark(void) {
    const char *file = getenv("MARK_ON_LOAD_FILE");
    if (file == NULL) return;
    const int fd = open(file, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) return;
    char line[32];
    const int n = snprintf(line, sizeof line, "%d\n", (int)getpid());
    if (n > 0) (void)!write(fd, line, (size_t)n);
    close(fd);
}
