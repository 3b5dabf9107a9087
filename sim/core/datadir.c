/*
 * Run-time lookup of data folders (see datadir.h for the order).  Each
 * call resolves afresh (a readlink and a few stat calls): callers ask once
 * per set-up, and no cached global is needed that way (STYLE.md §7).
 */
#include "sim/core/datadir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/core/error.h"

#ifndef CRSIM_BIN_TO_DATA
#define CRSIM_BIN_TO_DATA ""
#endif
#ifndef CRSIM_INSTALL_DATA
#define CRSIM_INSTALL_DATA ""
#endif
#ifndef CRSIM_SOURCE_ROOT
#define CRSIM_SOURCE_ROOT ""
#endif

enum { N_PLACES = 4 };

/* `dir`/`rel` with "x/.." pairs removed lexically (dir comes from
 * /proc/self/exe, which has no symbolic links left, so the lexical and the
 * physical parent agree).  A new string. */
static char *join_norm(const char *dir, const char *rel)
{
    size_t len = strlen(dir) + strlen(rel) + 2;
    char *in = sim_xmalloc(len), *out = sim_xmalloc(len + 1);
    snprintf(in, len, "%s/%s", dir, rel);
    size_t n = 0;
    const char *p = in;
    while (*p) {
        while (*p == '/')
            p++;
        const char *e = strchr(p, '/');
        size_t k = e ? (size_t)(e - p) : strlen(p);
        if (k == 0)
            break;
        if (k == 1 && p[0] == '.') {
            /* skip */
        } else if (k == 2 && p[0] == '.' && p[1] == '.' && n > 0 &&
                   !(n >= 3 && strncmp(out + n - 3, "/..", 3) == 0)) {
            while (n > 0 && out[n - 1] != '/')
                n--;
            if (n > 0)
                n--;
        } else {
            out[n++] = '/';
            memcpy(out + n, p, k);
            n += k;
        }
        p += k;
    }
    if (n == 0)
        out[n++] = '/';
    out[n] = '\0';
    free(in);
    return out;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int sim_datadir_find(const char *env, const char *rel, char **out)
{
    *out = NULL;
    const char *e = env ? getenv(env) : NULL;
    if (e && *e) {
        *out = sim_xstrdup(e);
        return SIM_OK;
    }
    char *places[N_PLACES] = {0};
    size_t n = 0;
    char exe[4096];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k > 0 && (size_t)k < sizeof exe - 1) {
        exe[k] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            char *up = join_norm(exe, "..");
            places[n++] = join_norm(up, rel);
            free(up);
            if (*CRSIM_BIN_TO_DATA) {
                char *root = join_norm(exe, CRSIM_BIN_TO_DATA);
                places[n++] = join_norm(root, rel);
                free(root);
            }
        }
    }
    if (*CRSIM_INSTALL_DATA)
        places[n++] = join_norm(CRSIM_INSTALL_DATA, rel);
    if (*CRSIM_SOURCE_ROOT)
        places[n++] = join_norm(CRSIM_SOURCE_ROOT, rel);
    for (size_t i = 0; i < n && !*out; i++)
        if (is_dir(places[i])) {
            *out = places[i];
            places[i] = NULL;
        }
    int rc = SIM_OK;
    if (!*out) {
        char list[900] = "";
        size_t used = 0;
        for (size_t i = 0; i < n; i++) {
            int w = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", places[i]);
            if (w < 0 || (size_t)w >= sizeof list - used)
                break;
            used += (size_t)w;
        }
        rc = SIM_ERROR(SIM_EIO, "cannot find crsim's %s folder: $%s is not set and none of "
                       "%s exists; expected %s set to that folder, or crsim installed with "
                       "its data (meson install: <prefix>/bin/crsim beside "
                       "<prefix>/share/crsim/%s)", rel, env ? env : "(none)",
                       n ? list : "(no place known)", env ? env : "an environment variable",
                       rel);
    }
    for (size_t i = 0; i < n; i++)
        free(places[i]);
    return rc;
}
