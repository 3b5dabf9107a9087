/*
 * Opening input files the one safe way.  Every reader of user-named
 * input (the config loader, the Mooncake trace, the CSV readers and with
 * them the ServeGen folders) opens through sim_file_open, which refuses
 * anything that is not a regular file: a FIFO would block the open (and
 * then the first read) until a writer appears, /dev/zero or /dev/urandom
 * would be read for gigabytes before a misleading parse error, and a
 * directory fails only at the first read.  Issue 17, item 10.
 */
#ifndef CRSIM_SIM_FILEIO_H
#define CRSIM_SIM_FILEIO_H

#include <stdint.h>
#include <stdio.h>

/*
 * Open `path` for reading as a stream.  The open itself never blocks (it
 * is made with O_NONBLOCK, so a FIFO without a writer opens at once and is
 * then refused; the flag is cleared before the stream is returned).
 * `what` names the file's kind in messages ("key-rate file", "config",
 * "Mooncake trace"); `expect` is the "expected ..." half of the messages
 * (without "expected "), e.g. "a readable Mooncake JSONL trace".
 * On success *out is the open stream (the caller fcloses it).  Returns
 * SIM_OK, or SIM_EIO with *out NULL and one of the messages
 *   "PATH: cannot open WHAT: <strerror>; expected EXPECT"
 *   "PATH: WHAT is a directory, not a regular file; expected EXPECT"
 * (likewise "a FIFO", "a character device", "a block device", "a socket").
 */
int sim_file_open(const char *path, const char *what, const char *expect, FILE **out);

/*
 * The input-file hook: while one is installed, sim_file_open (and
 * sim_file_note, for readers that open a file another way, such as the
 * trace cache of workloads/ingest.c) calls fn(ctx, path) for every input
 * file opened, so the experiment harness can record the content hash of
 * every file a config names (issue 38 D5: run identity).  One hook per
 * process, installed by the main thread while no other thread reads
 * input (set-up); NULL removes it.  Cannot fail.
 */
typedef void (*sim_file_hook_fn)(void *ctx, const char *path);
void sim_file_set_hook(sim_file_hook_fn fn, void *ctx);
void sim_file_note(const char *path);

/*
 * XXH3-64 (xxHash 0.8) of the bytes of the file at `path` into *hash and
 * its length in bytes into *size.  Returns SIM_OK, or SIM_EIO naming the
 * path.
 */
int sim_file_hash(const char *path, uint64_t *hash, uint64_t *size);

/*
 * The memory this process may use, bytes: MemAvailable of /proc/meminfo,
 * or the environment variable CRSIM_MEM_AVAILABLE_GB (a decimal number of
 * GB: a batch job's own limit; the tests) when it is set; NAN when
 * unknown (then no limit applies).  Read by the size estimate
 * (docs/harness.md, "Size estimate") and the trace loaders.  Cannot fail.
 */
double sim_mem_available(void);

#endif
