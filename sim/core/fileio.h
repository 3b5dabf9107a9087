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

#endif
