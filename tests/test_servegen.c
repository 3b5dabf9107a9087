/*
 * Tests of the ServeGen per-client reader (workloads/servegen.c): extracts
 * one model's folder from the shared tarball into a temporary directory,
 * checks the client count, windows and per-client skew, and checks that
 * malformed rows are rejected with file:line messages.
 * Usage: test_servegen SERVEGEN_TAR_XZ.  Exits 77 (skip) if tar cannot
 * extract the archive on this machine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/core/error.h"
#include "workloads/servegen.h"
#include "check.h"

static char tmpdir[] = "/tmp/crsim_servegen_XXXXXX";

static void cleanup(void)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not remove %s\n", tmpdir);
}

static void test_real(const char *tarball)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "tar -xJf '%s' -C '%s' data/language/m-small data/reason/deepseek-r1",
             tarball, tmpdir);
    if (system(cmd) != 0) {
        fprintf(stderr, "cannot extract %s with tar -J: skipped\n", tarball);
        cleanup();
        exit(77);
    }
    const char *models[2] = {"language/m-small", "reason/deepseek-r1"};
    const size_t clients[2] = {43, 73}, windows[2] = {2016, 144};
    for (int m = 0; m < 2; m++) {
        char dir[600];
        snprintf(dir, sizeof dir, "%s/data/%s", tmpdir, models[m]);
        wl_servegen sg;
        if (wl_servegen_load(dir, 1, &sg)) {
            fprintf(stderr, "%s\n", sim_errmsg());
            exit(1);
        }
        CHECK_INT_EQ(sg.n_clients, clients[m]);
        CHECK_INT_EQ(sg.n_windows, windows[m]);
        CHECK_NEAR(sg.window_s, 600, 0);
        CHECK(strcmp(sg.names[0], "chunk-0-trace.csv") == 0);
        CHECK(strcmp(sg.names[1], "chunk-1-trace.csv") == 0); /* numeric order */
        wl_keyrates kr;
        size_t idle;
        CHECK_INT_EQ(wl_servegen_keyrates(&sg, (size_t)-1, &kr, &idle), SIM_OK);
        wl_keystats st;
        CHECK_INT_EQ(wl_keyrates_describe(&kr, &st), SIM_OK);
        printf("%-20s %zu clients (%zu idle), %zu windows, total %.3f requests/s, Gini %.3f, "
               "top-10%% share %.3f, max share %.3f\n", models[m], sg.n_clients, idle,
               sg.n_windows, st.total, st.gini, st.top10, st.max_share);
        /* The data README: per-client Gini 0.65-0.87 depending on the model. */
        CHECK(st.gini > 0.6 && st.gini < 0.9);
        /* Mean rate = mean over windows of the per-window rates. */
        double s = 0;
        for (size_t w = 0; w < sg.n_windows; w++)
            s += sg.rate[w];
        CHECK_NEAR(sg.mean_rate[0], s / (double)sg.n_windows, 1e-12);
        /* A busy window's vector. */
        size_t busiest = 0;
        double best = -1;
        for (size_t w = 0; w < sg.n_windows; w++) {
            double t = 0;
            for (size_t i = 0; i < sg.n_clients; i++)
                t += sg.rate[i * sg.n_windows + w];
            if (t > best) {
                best = t;
                busiest = w;
            }
        }
        wl_keyrates wk;
        CHECK_INT_EQ(wl_servegen_keyrates(&sg, busiest, &wk, NULL), SIM_OK);
        CHECK_NEAR(wl_keyrates_total(&wk), best, 1e-9 * best);
        wl_keyrates_fini(&wk);
        CHECK_INT_EQ(wl_servegen_keyrates(&sg, sg.n_windows, &wk, NULL), SIM_EINVAL);
        wl_keyrates_fini(&kr);
        wl_servegen_fini(&sg);
    }
}

static void expect_bad(const char *sub, const char *text, const char *where, const char *what)
{
    char dir[600], path[700], cmd[800];
    snprintf(dir, sizeof dir, "%s/%s", tmpdir, sub);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    CHECK(system(cmd) == 0);
    snprintf(path, sizeof path, "%s/chunk-0-trace.csv", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
    wl_servegen sg;
    CHECK_INT_EQ(wl_servegen_load(dir, 0, &sg), SIM_EINVAL);
    char full[800];
    snprintf(full, sizeof full, "%s%s", path, where);
    CHECK_STR_CONTAINS(sim_errmsg(), full);
    CHECK_STR_CONTAINS(sim_errmsg(), what);
    CHECK_STR_CONTAINS(sim_errmsg(), "expected");
    CHECK(sg.names == NULL);
}

static void test_bad(void)
{
    expect_bad("b1", "0,1,1,Gamma,1,1\n600,1,1\n", ":2:", "3 fields");
    expect_bad("b2", "0,1,1,Gamma,1,1\n600,fast,1,Gamma,1,1\n", ":2:",
               "rate_rps 'fast' is not a number");
    expect_bad("b3", "0,-1,1,Gamma,1,1\n", ":1:", "rate_rps -1");
    expect_bad("b4", "0,1,nan,Gamma,1,1\n", ":1:", "iat_cv 'nan' is not a number");
    expect_bad("b5", "0,1,1,Poisson,1,1\n", ":1:", "pattern 'Poisson'");
    expect_bad("b6", "0,1,1,Gamma,1,1\n0,1,1,Gamma,1,1\n", ":2:", "does not follow");
    expect_bad("b7", "0,1,1,Gamma,1,1,7\n", ":1:", "more than 6 fields");
    expect_bad("b8", "", ":", "no rows");
    /* Issue 17 items 3 and 16: a sum of rates that overflows (before: an
     * infinite mean and a "complete" run), fractional, uneven and hex
     * window starts (before: accepted, the spacing taken from the first
     * two rows). */
    expect_bad("b9", "0,1e308,1,Gamma,1,1\n600,1e308,1,Gamma,1,1\n", ": rate_rps values sum "
               "to inf", "expected rates whose sums are finite");
    expect_bad("b10", "0.5,1,1,Gamma,1,1\n", ":1:", "window_start_s 0.5 is not a whole number");
    expect_bad("b11", "0,1,1,Gamma,1,1\n600,1,1,Gamma,1,1\n1300,1,1,Gamma,1,1\n", ":3:",
               "window_start_s 1300 is 700 s after the previous window, but the first two "
               "windows are 600 s apart");
    expect_bad("b12", "0x0,1,1,Gamma,1,1\n", ":1:", "window_start_s '0x0' is not a decimal "
               "number");
    expect_bad("b13", "1e300,1,1,Gamma,1,1\n", ":1:", "below 2^53");
    wl_servegen sg;
    CHECK_INT_EQ(wl_servegen_load("/nonexistent/servegen", 0, &sg), SIM_EIO);
    /* A header line is accepted. */
    char dir[600], path[700], cmd[800];
    snprintf(dir, sizeof dir, "%s/ok", tmpdir);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    CHECK(system(cmd) == 0);
    snprintf(path, sizeof path, "%s/chunk-3-trace.csv", dir);
    FILE *f = fopen(path, "w");
    fputs("window_start_s,rate_rps,iat_cv,pattern,shape,scale\n0,2,1,Gamma,1,0.5\n600,0,0,,0,0\n",
          f);
    fclose(f);
    CHECK_INT_EQ(wl_servegen_load(dir, 0, &sg), SIM_OK);
    CHECK_INT_EQ(sg.n_windows, 2);
    CHECK_NEAR(sg.mean_rate[0], 1.0, 0);
    CHECK_NEAR(sg.window_s, 600, 0);
    CHECK_NEAR(sg.start_s, 0, 0);
    wl_servegen_fini(&sg);
    /* Two clients must cover the same windows: same first start and
     * spacing, not only the same row count. */
    snprintf(path, sizeof path, "%s/chunk-4-trace.csv", dir);
    f = fopen(path, "w");
    fputs("600,2,1,Gamma,1,0.5\n1200,0,0,,0,0\n", f);
    fclose(f);
    CHECK_INT_EQ(wl_servegen_load(dir, 0, &sg), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "chunk-4-trace.csv: windows start at 600 s, 600 s apart, "
                                     "but in chunk-3-trace.csv at 0 s, 600 s apart");
    /* Two clients each finite, whose sum overflows. */
    f = fopen(path, "w");
    fputs("0,1.7e308,1,Gamma,1,0.5\n600,1.7e308,0,,0,0\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/chunk-3-trace.csv", dir);
    f = fopen(path, "w");
    fputs("0,1e308,1,Gamma,1,0.5\n600,1e308,0,,0,0\n", f);
    fclose(f);
    CHECK_INT_EQ(wl_servegen_load(dir, 0, &sg), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "rate_rps values sum to inf");
    /* Issue 17 item 10: a FIFO among the client files is refused at once
     * (before: the open blocked forever); a file given as the folder is
     * named. */
    CHECK(unlink(path) == 0);
    CHECK(mkfifo(path, 0600) == 0);
    CHECK_INT_EQ(wl_servegen_load(dir, 0, &sg), SIM_EIO);
    CHECK_STR_CONTAINS(sim_errmsg(), "chunk-3-trace.csv: ServeGen trace is a FIFO (named pipe), "
                                     "not a regular file");
    CHECK_INT_EQ(wl_servegen_load(path, 0, &sg), SIM_EIO);
    CHECK_STR_CONTAINS(sim_errmsg(), "cannot open ServeGen folder: Not a directory");
    unlink(path);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s SERVEGEN_TAR_XZ\n", argv[0]);
        return 99;
    }
    CHECK(mkdtemp(tmpdir) != NULL);
    test_bad();
    test_real(argv[1]);
    cleanup();
    printf("servegen: all tests passed\n");
    return 0;
}
